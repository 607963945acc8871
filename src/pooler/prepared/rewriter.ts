// One client's prepared statements in transaction mode: its names mapped to pooler-owned ones, prepared lazily on
// whichever server it holds, replies kept in PostgreSQL's order; its groups of messages in flight (each Sync, Query
// or FunctionCall ends one) say what may be sent now, what waits for an earlier answer, and what is sent again after
// a DDL change.
import { BackendMessage, FrontendMessage, TxStatus } from '../../protocol/codes.js';
import {
  parseBind,
  parseErrorFields,
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
import type { Interner, Statement } from './interner.js';
import { LANE_MAX_ENTRIES, encodeLaneTable, type LaneEntry } from './lane.js';
import {
  BOUND,
  CLOSED,
  DESCRIBED,
  EXECUTED,
  OWN,
  PARSED,
  READY,
  ReplyQueue,
  type RewriteSink,
  type Slot,
} from './reply-queue.js';
import type { ServerStatements } from './server-cache.js';
import { isSql, sqlPrepare, parseSqlCommand, type SqlCommand } from './sql-commands.js';
import { maySchemaChange, maySchemaChangeBytes } from './schema-epoch.js';

export { REWRITER_WHOLE_TYPES, type RewriteSink } from './reply-queue.js';

/** 'S' in Describe and Close. */
export const STATEMENT = 0x53;

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

/** No lane table (shared: never written). */
const NO_LANE: readonly LaneEntry[] = Object.freeze([]);

/** Whether the lane may answer the client's `name` on `server`: prepared there and confirmed (not stale, not closing);
 * the unnamed statement only while a Parse of its text would find it now, under the client's settings and schema
 * epoch (`key`). */
function laneMay(server: ServerStatements, key: string, name: string, statement: Statement): boolean {
  if (server.peek(statement)?.state !== 'ready' || server.isStale(statement) || server.isClosing(statement))
    return false;
  return name !== '' || statement.settings === key;
}

/** An execution of `s` sent at `sent` (performance.now()) completed. */
function timed(s: Statement, sent: number): void {
  s.executions++;
  s.execTimeUs += (performance.now() - sent) * 1000;
}

/** One client's statement names and groups in flight, and what each of its messages becomes on the server it holds. */
export class StatementRewriter {
  /** The client's protocol-level statements by its own names; '' is the unnamed one. */
  private readonly named = new Map<string, Statement>();
  /** When each name was set (a count of Parses): DISCARD ALL in a pipeline forgets only older names. */
  private readonly namedAt = new Map<string, number>();
  private parses = 0;
  private server: ServerStatements | null = null;
  /** What each awaited reply belongs to; it also knows when PostgreSQL skips to the next Sync after an error. */
  private readonly replies = new ReplyQueue(
    (out) => this.groupDone(out),
    (slot, error, delivered) => this.takeOverError(slot, error, delivered),
  );
  /** The status byte of the last ReadyForQuery (the pooler links a transaction-mode client between transactions). */
  private lastStatus = TxStatus.Idle;
  /** The next message starts a group. */
  private groupFresh = true;
  /** The client messages of the current group, kept while it could be retried (see `takeOverError`); else null. */
  private groupLog: [number, Buffer][] | null = null;
  /** Position in `groupLog` of the message being handled. */
  private at = -1;
  /** A group to send again once PostgreSQL has answered its Sync. */
  private replay: { log: [number, Buffer][]; from: number; statement: Statement } | null = null;
  private noRetry = false;
  /** The group of the last Query that may drop every statement (DISCARD ALL, DEALLOCATE ALL); -1 for none. */
  private barrier = -1;
  /** Sync points sent (Sync, Query, FunctionCall) and answered: messages after the k-th belong to group k. */
  private groupsSent = 0;
  private groupsDone = 0;
  /** The group in which each name was last set or closed. */
  private readonly changedIn = new Map<string, number>();
  /** Client messages held back until an earlier group settles whether a name they use exists. */
  private readonly held: [number, Buffer][] = [];
  /** The server's `seq` when the current group began: its Parses are the ones this group sent. */
  private groupSeq = 0;
  /** The native lane's table since the last link (entry i of the addon's counts). */
  private lane: readonly LaneEntry[] = NO_LANE;
  /** The last table encoded for the lane and its bytes (the addon copies them at each link): given again unchanged. */
  private laneCached: readonly LaneEntry[] = NO_LANE;
  private laneBytes: Buffer | null = null;
  /** Handling messages the native lane already sent: nothing goes to the server. */
  private shadow = false;

  /** The group of the last Parse or Query that may change the schema (schema-epoch.ts); -1 for none. When it is
   * answered, the pool's texts move to a new epoch before anything held after it is handled. */
  private schemaGroup = -1;
  private readonly settingsOf: () => string;

  constructor(
    private readonly interner: Interner,
    /** The client's planner settings (its search_path), read at each Parse: part of every statement's identity. */
    settings: string | (() => string),
  ) {
    this.settingsOf = typeof settings === 'string' ? () => settings : settings;
  }

  private get settings(): string {
    return this.settingsOf();
  }

  /** The message being handled (a Parse or a Query, in the current group) may change the schema: what follows waits
   * for its answer, and then parses under the new schema epoch. */
  private schemaMayChange(): void {
    this.barrier = this.schemaGroup = this.groupsSent;
  }

  /** The client got a server (transaction mode: at each transaction's first message). */
  attach(server: ServerStatements): void {
    this.server = server;
    this.groupSeq = server.seq;
    this.lastStatus = TxStatus.Idle;
  }

  /** The server goes back to the pool; nothing may be outstanding. */
  detach(): void {
    this.server = null;
  }

  /** True when every reply the client is owed has been delivered. */
  get settled(): boolean {
    return this.replies.settled && this.held.length === 0;
  }

  /** The server owes the client a reply: what the pooler answered itself may wait to go out with it. */
  get awaitingServer(): boolean {
    return this.replies.awaitingServer;
  }

  /** Statements this client holds (SHOW and the operator pages). */
  statements(): IterableIterator<[string, Statement]> {
    return this.named.entries();
  }

  /** Statements the client prepared on the process a takeover moved it from (takeover-clients.ts): its names, as if
   * parsed here; a server gets each at its first use, as after any change of server. */
  restore(list: readonly { name: string; query: Buffer; types: Buffer }[]): void {
    for (const m of list) {
      const s = this.interner.intern(m.query, m.types, this.settings);
      this.interner.ref(s);
      const previous = this.named.get(m.name);
      if (previous) this.interner.unref(previous);
      this.named.set(m.name, s);
      this.namedAt.set(m.name, ++this.parses);
    }
  }

  /** The client is gone: its names go. */
  close(): void {
    for (const s of this.named.values()) this.interner.unref(s);
    this.named.clear();
    this.laneCached = NO_LANE;
    this.laneBytes = null;
  }

  // ---- client -> server ----

  /** One whole client message, while a server is attached. */
  clientMessage(type: number, msg: Buffer, out: RewriteSink): void {
    if (this.held.length > 0 || (!this.replies.skipping && this.mustWait(type, msg))) {
      this.held.push([type, msg]);
      return;
    }
    this.handle(type, msg, out);
  }

  /**
   * True when the message uses a name that a Parse or Close of an earlier, still unanswered group changed (if
   * PostgreSQL skips that group after an error, the change never happened), or a statement whose Parse or Close
   * such a group sent to the server. It waits for the answer; messages of the same group need not: an error
   * skips them with it.
   */
  private mustWait(type: number, msg: Buffer): boolean {
    if (this.groupsDone === this.groupsSent) return false;
    // Everything after a DISCARD ALL / DEALLOCATE ALL waits for it: it empties the server's statements.
    if (this.barrier >= this.groupsDone) return true;
    let name: string | null = null;
    let statement: Statement | undefined;
    try {
      if (type === FrontendMessage.Bind) name = parseBind(msg).statement;
      else if (type === FrontendMessage.Parse) {
        const p = parseParse(msg);
        name = p.name;
        statement = this.interner.intern(p.query, p.types, this.settings);
      } else if (type === FrontendMessage.Describe || type === FrontendMessage.Close) {
        const t = parseTarget(msg);
        if (t.kind === STATEMENT) name = t.name;
      }
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      return false; // malformed: PostgreSQL will refuse it (see the rewriter's handle)
    }
    if (type === FrontendMessage.Query) {
      const cmd = parseSqlCommand(msg.toString('utf8', 5, msg.length - 1));
      if (cmd) name = cmd.name;
      if (cmd?.kind === 'prepare') statement = this.sqlStatement(cmd);
    }
    if (name === null) return false;
    const g = this.changedIn.get(name);
    if (g !== undefined && g < this.groupsSent && g >= this.groupsDone) return true;
    // A Parse or Close of the statement (a new one, or the one the name has) from an earlier group is unanswered:
    // whether the server has it is not known yet.
    return this.unsure(statement) || this.unsure(this.named.get(name));
  }

  private unsure(s: Statement | undefined): boolean {
    if (!s) return false;
    const server = this.server!;
    if (server.isClosing(s)) return true;
    const entry = server.peek(s);
    return entry !== undefined && entry.state === 'pending' && entry.seq <= this.groupSeq;
  }

  private release(out: RewriteSink): void {
    while (this.held.length > 0 && !this.replies.skipping) {
      const [type, msg] = this.held[0]!;
      if (this.mustWait(type, msg)) return;
      this.held.shift();
      this.handle(type, msg, out);
    }
    while (this.held.length > 0 && this.replies.skipping) {
      const [type, msg] = this.held.shift()!;
      this.handle(type, msg, out);
    }
  }

  /**
   * Whether the server has the statement, counted as a cache hit (a Parse PostgreSQL is spared) or miss. A Parse
   * still unanswered from this group counts as there: if it fails, PostgreSQL skips the rest of the group too
   * (one from an earlier group has been answered: see `mustWait`).
   */
  private lookup(s: Statement, isParse: boolean, out: RewriteSink, use = true): boolean {
    const server = this.server!;
    if (server.isStale(s)) {
      // Its plan broke on a DDL change: close the old one first (a skipped Close leaves it there, still stale).
      server.remove(s);
      out.toServer(writeClose(STATEMENT, s.name));
      this.replies.add({ ends: CLOSED, drop: true, undo: () => server.restoreStale(s) });
    }
    const there = server.use(s) !== undefined;
    if (!there) {
      server.misses++;
      if (use) s.cacheMisses++;
    } else {
      // The server's counter is PgBouncer's and pg_doorman's (a Parse spared); the statement's counts every use
      // (count_used) that found it prepared, so a named statement bound a thousand times after one prepare shows that reuse.
      if (isParse) server.hits++;
      if (use) s.cacheHits++;
    }
    return there;
  }

  /** The interned statement of a SQL PREPARE: its body, and its declared parameter types in place of a Parse's. */
  private sqlStatement(cmd: Extract<SqlCommand, { kind: 'prepare' }>): Statement {
    return this.interner.intern(Buffer.from(cmd.body), Buffer.from(`sql:${cmd.types ?? ''}`), this.settings);
  }

  /**
   * `cached plan must not change result type` (0A000) for a statement the server had from before a DDL change: on a
   * direct connection the client's fresh Parse would have planned anew. Retried once, transparently, when nothing
   * of the group but the pooler's own replies reached the client, no other group is in flight and no transaction
   * block is open (the failed group rolled back whole); otherwise the error goes to the client and the statement is
   * closed and prepared again on this server at its next use.
   */
  private takeOverError(slot: Slot, error: Buffer, delivered: boolean): boolean {
    if (slot.statement === undefined || parseErrorFields(error).get('C') !== '0A000') return false;
    const retry =
      this.groupLog !== null &&
      slot.at !== undefined &&
      !delivered &&
      this.groupsSent === this.groupsDone + 1 &&
      this.held.length === 0;
    if (retry) this.replay = { log: this.groupLog!, from: slot.at!, statement: slot.statement };
    else this.server!.markStale(slot.statement);
    return retry;
  }

  /** Where a slot's message stands in its group, for a retry. */
  private mark(s: Statement): { statement: Statement; at?: number } {
    return this.groupLog ? { statement: s, at: this.at } : { statement: s };
  }

  // ---- server -> client ----

  /** A whole server message that may complete a slot (see REWRITER_WHOLE_TYPES); everything else passes by. */
  serverMessage(type: number, msg: Buffer, out: RewriteSink): void {
    if (type === BackendMessage.ReadyForQuery) this.lastStatus = msg[5]!;
    this.replies.serverMessage(type, msg, out);
  }

  private nextGroup(): void {
    this.groupFresh = true;
    this.groupsSent++;
    this.groupSeq = this.server!.seq;
  }

  private groupDone(out: RewriteSink): void {
    if (++this.groupsDone === this.groupsSent) this.changedIn.clear();
    if (this.schemaGroup >= 0 && this.groupsDone > this.schemaGroup) {
      // Whether it succeeded or not (a failed DDL changed nothing, and one more epoch costs only Parses).
      this.schemaGroup = -1;
      this.interner.schemaChanged();
    }
    if (this.replay) {
      // The plan behind a cached statement changed (0A000): close it, then send the group again from the message
      // that failed; the Bind or Describe prepares it afresh. The client saw none of the first attempt.
      const { log, from, statement } = this.replay;
      this.replay = null;
      const server = this.server!;
      server.remove(statement);
      out.toServer(writeClose(STATEMENT, statement.name));
      this.replies.add({ ends: CLOSED, drop: true });
      this.noRetry = true;
      this.groupFresh = true;
      for (const [type, msg] of log.slice(from)) this.handle(type, msg, out);
    }
    if (this.held.length > 0) this.release(out);
  }

  // ---- the native lane (native/relay-lane.h) ----

  /**
   * The table for the native lane on the attached server, or null when this client must be seen whole: it owes
   * the client something, a group is in flight or waits, a retry is due, or the server has Closes queued. Entries
   * are the client's names whose statement the server has prepared and confirmed (not stale, not closing).
   */
  laneTable(): Buffer | null {
    const server = this.server;
    this.lane = NO_LANE;
    if (!server || !this.settled || this.replay || this.groupsDone !== this.groupsSent || server.toClose.length > 0)
      return null;
    const key = this.interner.key(this.settings);
    // Most links give the table of the link before (the same statements, prepared on every server): its bytes again.
    const cached = this.laneCached;
    let n = 0;
    let same = true;
    for (const [name, statement] of this.named) {
      if (!laneMay(server, key, name, statement)) continue;
      if (same && (n >= cached.length || cached[n]!.name !== name || cached[n]!.statement !== statement)) same = false;
      n++;
    }
    if (n === 0) return null;
    if (same && n === cached.length) {
      this.lane = cached;
      return this.laneBytes!;
    }
    let lane: LaneEntry[] = [];
    for (const [name, statement] of this.named)
      if (laneMay(server, key, name, statement)) lane.push({ name, statement });
    if (n > LANE_MAX_ENTRIES) {
      lane = lane.sort((a, b) => b.statement.lastUsed - a.statement.lastUsed).slice(0, LANE_MAX_ENTRIES);
      // Cut by recency: not kept, as the same statements rarely come out of the cut again.
      this.laneCached = NO_LANE;
      this.laneBytes = null;
      this.lane = lane;
      return encodeLaneTable(lane);
    }
    this.lane = this.laneCached = lane;
    return (this.laneBytes = encodeLaneTable(lane));
  }

  /** The lane's answered groups, from `counts[at]`: `counts[at]` Parses answered by the pooler; for entry i,
   * `counts[at + 1 + 3i]` its Binds, `counts[at + 2 + 3i]` Executes of portals bound to it and `counts[at + 3 + 3i]`
   * their microseconds. */
  laneUsed(counts: Float64Array, n: number, at = 0): void {
    const lane = this.lane;
    this.lane = NO_LANE;
    const server = this.server;
    if (!server) return;
    const now = Date.now();
    for (let i = 0; i < n && i < lane.length; i++) {
      const uses = counts[at + 1 + 3 * i]!;
      const s = lane[i]!.statement;
      s.executions += counts[at + 2 + 3 * i]!;
      s.execTimeUs += counts[at + 3 + 3 * i]!;
      if (uses <= 0) continue;
      s.countUsed += uses;
      // Every lane use found the statement prepared on this server (the lane takes only confirmed ones).
      s.cacheHits += uses;
      s.lastUsed = now;
      server.use(s);
    }
    const hits = counts[at]!;
    let unnamed: Statement | undefined;
    if (hits > 0) for (const e of lane) if (e.name === '') unnamed = e.statement;
    if (unnamed) {
      server.hits += hits;
      unnamed.countUsed += hits;
      unnamed.cacheHits += hits;
      unnamed.lastUsed = now;
      server.use(unnamed);
    }
  }

  /**
   * The lane ended with groups unanswered: `msgs` went to the server as this rewriter would have sent them (hits
   * only), so they are handled again without sending anything, to rebuild the replies owed; the first `delivered`
   * of those replies already reached the client. `status`: the server's last ReadyForQuery status (0: unknown).
   */
  adoptSent(msgs: [number, Buffer][], delivered: number, status: number, out: RewriteSink): void {
    if (status !== 0) this.lastStatus = status;
    if (msgs.length === 0) return;
    const quiet: RewriteSink = { toServer: () => undefined, toClient: (buf) => out.toClient(buf) };
    this.shadow = true;
    this.replies.holdOwn = true;
    try {
      for (const [type, msg] of msgs) this.handle(type, msg, quiet);
    } finally {
      this.shadow = false;
      this.replies.holdOwn = false;
    }
    this.replies.fastForward(delivered, out);
  }

  /** The native relay forwarded `n` sync points (simple queries) itself before handing this client over: their
   * replies come first and pass as they are. */
  expectEarlierReplies(n: number): void {
    for (let i = 0; i < n; i++) {
      this.groupsSent++;
      this.replies.add({ ends: READY, simple: true });
    }
    this.groupFresh = true;
  }

  // ---- what each client message becomes ----

  /** Portals bound by this client to known statements, for timing their Executes. */
  private readonly portals = new Map<string, Statement>();

  private handle(type: number, msg: Buffer, out: RewriteSink): void {
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
