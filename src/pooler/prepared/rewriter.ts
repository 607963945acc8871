// One client's prepared statements in transaction mode: its names mapped to pooler-owned ones, prepared lazily on whichever server it holds, replies kept in PostgreSQL's order.
import { FrontendMessage, TxStatus } from '../../protocol/codes.js';
import {
  parseBind,
  parseParse,
  parseTarget,
  writeBind,
  writeClose,
  writeCloseComplete,
  writeDescribe,
  writeParse,
  writeParseComplete,
} from '../../protocol/extended.js';
import { ProtocolError } from '../../protocol/reader.js';
import { writeCommandComplete, writeQuery } from '../../protocol/writer.js';
import type { Statement } from './interner.js';
import { BOUND, CLOSED, DESCRIBED, EXECUTED, OWN, PARSED, READY, type RewriteSink, type Slot } from './reply-queue.js';
import { RewriterState, STATEMENT } from './rewriter-state.js';
import { isSql, sqlPrepare, parseSqlCommand, type SqlCommand } from './sql-commands.js';
import { maySchemaChange, maySchemaChangeBytes } from './schema-epoch.js';

export { REWRITER_WHOLE_TYPES, type RewriteSink } from './reply-queue.js';

/** A simple Query that may drop every prepared statement of the server. */
const DROPS_ALL = /\b(?:discard\s+all|deallocate\s+(?:prepare\s+)?all)\b/i;
const SYNC = Buffer.from([FrontendMessage.Sync, 0, 0, 0, 4]);
const NO_TYPES = Buffer.from([0, 0]);

/** The portal an Execute names (the unnamed one in almost every case). */
function portalOf(msg: Buffer): string {
  if (msg[5] === 0) return '';
  const end = msg.indexOf(0, 5);
  return msg.toString('utf8', 5, end < 0 ? msg.length : end);
}

/** An execution of `s` sent at `sent` (performance.now()) completed. */
function timed(s: Statement, sent: number): void {
  s.executions++;
  s.execTimeUs += (performance.now() - sent) * 1000;
}

/** What each client message becomes on the server it holds; the bookkeeping of names and groups is RewriterState's. */
export class StatementRewriter extends RewriterState {
  /** Portals bound by this client to known statements, for timing their Executes. */
  private readonly portals = new Map<string, Statement>();
  protected override handle(type: number, msg: Buffer, out: RewriteSink): void {
    if (this.groupFresh) {
      // Only a group sent while nothing else is in flight, outside a transaction block, can be sent again whole.
      this.groupFresh = false;
      this.groupLog =
        !this.noRetry && this.groupsDone === this.groupsSent && this.lastStatus === TxStatus.Idle ? [] : null;
      this.noRetry = false;
    }
    if (this.groupLog) this.at = this.groupLog.push([type, msg]) - 1;
    if (this.replies.skipping) {
      // PostgreSQL ignores everything until Sync: forward as it is, assume nothing.
      if (type === FrontendMessage.Sync) {
        this.replies.skipping = false;
        this.sendSync(msg, out);
      } else out.toServer(msg);
      return;
    }
    try {
      switch (type) {
        case FrontendMessage.Parse:
          return this.onParse(msg, out);
        case FrontendMessage.Bind:
          return this.onBind(msg, out);
        case FrontendMessage.Describe:
          return this.onDescribe(msg, out);
        case FrontendMessage.Close:
          return this.onClose(msg, out);
      }
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      // A malformed body: PostgreSQL reads it as it is and answers with its own error (08P01), then skips to Sync.
      return this.forward(msg, out, {
        ends:
          type === FrontendMessage.Parse
            ? PARSED
            : type === FrontendMessage.Bind
              ? BOUND
              : type === FrontendMessage.Close
                ? CLOSED
                : DESCRIBED,
      });
    }
    switch (type) {
      case FrontendMessage.Execute:
        return this.onExecute(msg, out);
      case FrontendMessage.Sync:
        return this.sendSync(msg, out);
      case FrontendMessage.Query:
        return this.onQuery(msg, out);
      case FrontendMessage.FunctionCall:
        this.nextGroup();
        return this.forward(msg, out, { ends: READY, simple: true });
      default:
        out.toServer(msg); // Flush, CopyData, CopyDone, CopyFail: no reply of their own
    }
  }

  private forward(msg: Buffer, out: RewriteSink, slot: Slot): void {
    out.toServer(msg);
    this.push(slot, out);
  }

  private push(slot: Slot, out: RewriteSink): void {
    this.replies.push(slot, out);
  }

  private sendSync(msg: Buffer, out: RewriteSink): void {
    const server = this.server!;
    // Messages the native lane sent went without Closes (it runs only while none are queued).
    for (const s of this.shadow ? [] : server.takeClosing()) {
      out.toServer(writeClose(STATEMENT, s.name));
      this.replies.add({ ends: CLOSED, drop: true, onOk: () => server.closedOne(s), undo: () => server.reopen(s) });
    }
    this.nextGroup();
    this.forward(msg, out, { ends: READY, sync: true });
  }

  /** Sends a Parse of `s` under its server name (a Parse of it from an earlier group is answered by now: see `mustWait`). */
  private sendParse(s: Statement, out: RewriteSink): void {
    this.server!.add(s);
    // A SQL PREPARE's declared types are text; through a Parse, PostgreSQL infers them (as for untyped parameters).
    out.toServer(writeParse(s.name, s.query, isSql(s) ? NO_TYPES : s.types));
  }

  /** Makes sure the server has `s` under its name before a message that uses it as `clientName`; `use`: the message
   * is a use of the statement (a Bind), counted in its cache hits or misses, not a Describe or a duplicate Parse. */
  private ensurePrepared(s: Statement, clientName: string, out: RewriteSink, use = false): void {
    if (this.lookup(s, false, out, use)) return;
    const server = this.server!;
    this.sendParse(s, out);
    this.replies.add({
      ends: PARSED,
      drop: true,
      rename: [s.name, clientName],
      onOk: () => server.confirm(s),
      undo: () => server.remove(s),
      ...this.mark(s),
    });
  }

  private onParse(msg: Buffer, out: RewriteSink): void {
    const p = parseParse(msg);
    if (maySchemaChangeBytes(p.query)) this.schemaMayChange();
    const server = this.server!;
    const existing = p.name === '' ? undefined : this.named.get(p.name);
    if (existing) {
      // PostgreSQL's own 42P05: Parse the name the server already has, and show the client's name in the message.
      this.ensurePrepared(existing, p.name, out);
      out.toServer(writeParse(existing.name, p.query, p.types));
      this.push({ ends: PARSED, rename: [existing.name, p.name] }, out);
      return;
    }
    const s = this.interner.intern(p.query, p.types, this.settings);
    s.countUsed++;
    s.lastUsed = Date.now();
    this.interner.ref(s);
    // Only the unnamed statement can be replaced. PostgreSQL drops the old one even when the new Parse fails,
    // but not when it skips the Parse after an earlier error.
    const previous = this.named.get(p.name);
    this.named.set(p.name, s);
    this.namedAt.set(p.name, ++this.parses);
    this.changedIn.set(p.name, this.groupsSent);
    const dropPrevious = () => {
      if (previous) this.interner.unref(previous);
    };
    const undo = (skipped: boolean) => {
      if (this.named.get(p.name) === s) {
        if (skipped && previous) this.named.set(p.name, previous);
        else this.named.delete(p.name);
      }
      if (!skipped) dropPrevious();
      this.interner.unref(s);
    };
    if (this.lookup(s, true, out)) {
      // The pooler answers a cached text itself only when it knows the transaction is not failed: nothing earlier is
      // in flight and the last ReadyForQuery was not 'E'. Else an unnamed Parse of the text goes to the server (its
      // own statement stays as it is), which answers it as a direct connection would: ParseComplete, or 25P02 in a
      // failed transaction block; a Close of the server's unnamed statement follows, since a client's Bind of an
      // unnamed statement it lost must meet none there. What the native lane sent is taken over as answered from
      // the cache (it answers a Parse under the same conditions only: see native/relay-lane.h).
      if (!this.shadow && (this.lastStatus === TxStatus.Failed || this.groupsDone !== this.groupsSent)) {
        out.toServer(writeParse('', p.query, p.types));
        this.push({ ends: PARSED, onOk: dropPrevious, undo }, out);
        out.toServer(writeClose(STATEMENT, ''));
        this.replies.add({ ends: CLOSED, drop: true });
        return;
      }
      return this.push({ ends: OWN, reply: writeParseComplete(), onOk: dropPrevious, undo }, out);
    }
    this.sendParse(s, out);
    this.push(
      {
        ends: PARSED,
        onOk: () => {
          server.confirm(s);
          dropPrevious();
        },
        undo: (skipped) => {
          server.remove(s);
          undo(skipped);
        },
      },
      out,
    );
  }

  /** An Execute of a portal bound to a known statement is timed into it (SHOW PREPARED_STATEMENTS, /api/top/queries). */
  private onExecute(msg: Buffer, out: RewriteSink): void {
    const s = this.portals.size ? this.portals.get(portalOf(msg)) : undefined;
    if (!s) return this.forward(msg, out, { ends: EXECUTED });
    const sent = performance.now();
    this.forward(msg, out, { ends: EXECUTED, onOk: () => timed(s, sent) });
  }

  private onBind(msg: Buffer, out: RewriteSink): void {
    const b = parseBind(msg);
    const s = this.named.get(b.statement);
    if (!s) {
      this.portals.delete(b.portal);
      return this.forward(msg, out, { ends: BOUND }); // PostgreSQL's own 26000
    }
    this.portals.set(b.portal, s);
    s.countUsed++;
    s.lastUsed = Date.now();
    this.ensurePrepared(s, b.statement, out, true);
    this.forward(writeBind(b.portal, s.name, b.rest), out, {
      ends: BOUND,
      rename: [s.name, b.statement],
      ...this.mark(s),
    });
  }

  private onDescribe(msg: Buffer, out: RewriteSink): void {
    const d = parseTarget(msg);
    const s = d.kind === STATEMENT ? this.named.get(d.name) : undefined;
    const slot: Slot = { ends: DESCRIBED };
    if (!s) return this.forward(msg, out, slot);
    this.ensurePrepared(s, d.name, out);
    slot.rename = [s.name, d.name];
    Object.assign(slot, this.mark(s));
    this.forward(writeDescribe(STATEMENT, s.name), out, slot);
  }

  private onClose(msg: Buffer, out: RewriteSink): void {
    const c = parseTarget(msg);
    if (c.kind !== STATEMENT) return this.forward(msg, out, { ends: CLOSED });
    // The server keeps the statement for others; only the client's name goes (a missing name is no error).
    const s = this.named.get(c.name);
    if (!s) return this.push({ ends: OWN, reply: writeCloseComplete() }, out);
    this.named.delete(c.name);
    this.changedIn.set(c.name, this.groupsSent);
    this.push(
      {
        ends: OWN,
        reply: writeCloseComplete(),
        onOk: () => this.interner.unref(s),
        undo: () => {
          if (this.named.has(c.name)) this.interner.unref(s);
          else this.named.set(c.name, s);
        },
      },
      out,
    );
  }

  private onQuery(msg: Buffer, out: RewriteSink): void {
    // A simple Query destroys the unnamed statement, whatever it says (PostgreSQL's exec_simple_query).
    const unnamed = this.named.get('');
    if (unnamed) {
      this.named.delete('');
      this.changedIn.set('', this.groupsSent);
      this.interner.unref(unnamed);
    }
    const cmd = parseSqlCommand(msg.toString('utf8', 5, msg.length - 1));
    if (cmd?.kind === 'prepare') return this.onSqlPrepare(cmd, out);
    const s = cmd ? this.named.get(cmd.name) : undefined;
    if (s && cmd?.kind === 'deallocate') {
      // The pooler answers, keeping PostgreSQL's transaction status through an empty query.
      this.named.delete(cmd.name);
      this.interner.unref(s);
      this.changedIn.set(cmd.name, this.groupsSent);
      this.nextGroup();
      out.toServer(writeQuery(''));
      this.push({ ends: READY, simple: true, emptyAs: writeCommandComplete('DEALLOCATE') }, out);
      return;
    }
    if (s && cmd?.kind === 'execute') return this.onSqlExecute(s, cmd.name, cmd.args, out);
    const server = this.server!;
    const serverSeq = server.seq;
    const parses = this.parses;
    const text = msg.toString('latin1', 5, msg.length - 1);
    if (DROPS_ALL.test(text)) this.barrier = this.groupsSent;
    if (maySchemaChange(text)) this.schemaMayChange();
    this.nextGroup();
    this.forward(msg, out, {
      ends: READY,
      simple: true,
      onTag: (tag) => {
        if (tag !== 'DISCARD ALL' && tag !== 'DEALLOCATE ALL') return;
        // The server lost every statement it had when the query ran, the client every name it had when it sent it.
        server.clearUpTo(serverSeq);
        for (const [n, st] of this.named) {
          if ((this.namedAt.get(n) ?? 0) > parses) continue;
          this.named.delete(n);
          this.interner.unref(st);
        }
      },
    });
  }

  private onSqlPrepare(cmd: Extract<SqlCommand, { kind: 'prepare' }>, out: RewriteSink): void {
    this.nextGroup();
    if (this.named.has(cmd.name)) {
      // PostgreSQL's 42P05, raised on the server so that a transaction block fails as it would.
      const text = `prepared statement "${cmd.name}" already exists`.replace(/'/g, "''");
      out.toServer(writeQuery(`DO $tp$BEGIN RAISE EXCEPTION USING ERRCODE = '42P05', MESSAGE = '${text}'; END$tp$`));
      this.push({ ends: READY, simple: true, strip: ['W', 'P', 'F', 'L', 'R'] }, out);
      return;
    }
    const s = this.sqlStatement(cmd);
    s.countUsed++;
    s.lastUsed = Date.now();
    this.interner.ref(s);
    this.named.set(cmd.name, s);
    this.namedAt.set(cmd.name, ++this.parses);
    this.changedIn.set(cmd.name, this.groupsSent - 1);
    const undo = () => {
      if (this.named.get(cmd.name) === s) this.named.delete(cmd.name);
      this.interner.unref(s);
    };
    const server = this.server!;
    if (this.lookup(s, true, out)) {
      out.toServer(writeQuery(''));
      this.push({ ends: READY, simple: true, emptyAs: writeCommandComplete('PREPARE'), undo }, out);
      return;
    }
    server.add(s);
    out.toServer(writeQuery(sqlPrepare(s)));
    this.push(
      {
        ends: READY,
        simple: true,
        rename: [s.name, cmd.name],
        onOk: () => server.confirm(s),
        undo: () => {
          server.remove(s);
          undo();
        },
      },
      out,
    );
  }

  private onSqlExecute(s: Statement, name: string, args: string, out: RewriteSink): void {
    const server = this.server!;
    s.countUsed++;
    s.lastUsed = Date.now();
    if (!this.lookup(s, false, out)) {
      server.add(s);
      const ok = () => server.confirm(s);
      const gone = () => server.remove(s);
      if (isSql(s)) {
        this.nextGroup();
        out.toServer(writeQuery(sqlPrepare(s)));
        this.replies.add({ ends: READY, simple: true, drop: true, rename: [s.name, name], onOk: ok, undo: gone });
      } else {
        this.nextGroup();
        out.toServer(writeParse(s.name, s.query, s.types));
        this.replies.add({ ends: PARSED, drop: true, rename: [s.name, name], onOk: ok, undo: gone });
        out.toServer(SYNC);
        this.replies.add({ ends: READY, drop: true, sync: true });
      }
    }
    this.nextGroup();
    out.toServer(writeQuery(`EXECUTE ${s.name}${args}`));
    const sent = performance.now();
    this.push({ ends: READY, simple: true, rename: [s.name, name], onOk: () => timed(s, sent) }, out);
  }
}
