// A client's statement names and its groups of messages in flight (each Sync, Query or FunctionCall ends one): what may be sent now, what waits for an earlier answer, and what is sent again after a DDL change.
import { BackendMessage, FrontendMessage, TxStatus } from '../../protocol/codes.js';
import { parseBind, parseErrorFields, parseParse, parseTarget, writeClose } from '../../protocol/extended.js';
import { ProtocolError } from '../../protocol/reader.js';
import type { Interner, Statement } from './interner.js';
import { LANE_MAX_ENTRIES, encodeLaneTable, type LaneEntry } from './lane.js';
import { CLOSED, READY, ReplyQueue, type RewriteSink, type Slot } from './reply-queue.js';
import type { ServerStatements } from './server-cache.js';
import { parseSqlCommand, type SqlCommand } from './sql-commands.js';

/** 'S' in Describe and Close. */
export const STATEMENT = 0x53;

export abstract class RewriterState {
  /** The client's protocol-level statements by its own names; '' is the unnamed one. */
  protected readonly named = new Map<string, Statement>();
  /** When each name was set (a count of Parses): DISCARD ALL in a pipeline forgets only older names. */
  protected readonly namedAt = new Map<string, number>();
  protected parses = 0;
  protected server: ServerStatements | null = null;
  /** What each awaited reply belongs to; it also knows when PostgreSQL skips to the next Sync after an error. */
  protected readonly replies = new ReplyQueue(
    (out) => this.groupDone(out),
    (slot, error, delivered) => this.takeOverError(slot, error, delivered),
  );
  /** The status byte of the last ReadyForQuery (the pooler links a transaction-mode client between transactions). */
  protected lastStatus = TxStatus.Idle;
  /** The next message starts a group. */
  protected groupFresh = true;
  /** The client messages of the current group, kept while it could be retried (see `takeOverError`); else null. */
  protected groupLog: [number, Buffer][] | null = null;
  /** Position in `groupLog` of the message being handled. */
  protected at = -1;
  /** A group to send again once PostgreSQL has answered its Sync. */
  protected replay: { log: [number, Buffer][]; from: number; statement: Statement } | null = null;
  protected noRetry = false;
  /** The group of the last Query that may drop every statement (DISCARD ALL, DEALLOCATE ALL); -1 for none. */
  protected barrier = -1;
  /** Sync points sent (Sync, Query, FunctionCall) and answered: messages after the k-th belong to group k. */
  protected groupsSent = 0;
  protected groupsDone = 0;
  /** The group in which each name was last set or closed. */
  protected readonly changedIn = new Map<string, number>();
  /** Client messages held back until an earlier group settles whether a name they use exists. */
  protected readonly held: [number, Buffer][] = [];
  /** The server's `seq` when the current group began: its Parses are the ones this group sent. */
  protected groupSeq = 0;
  /** The native lane's table since the last link (entry i of the addon's counts). */
  private lane: LaneEntry[] = [];
  /** Handling messages the native lane already sent: nothing goes to the server. */
  protected shadow = false;

  /** The group of the last Parse or Query that may change the schema (schema-epoch.ts); -1 for none. When it is
   * answered, the pool's texts move to a new epoch before anything held after it is handled. */
  protected schemaGroup = -1;
  private readonly settingsOf: () => string;

  constructor(
    protected readonly interner: Interner,
    /** The client's planner settings (its search_path), read at each Parse: part of every statement's identity. */
    settings: string | (() => string),
  ) {
    this.settingsOf = typeof settings === 'string' ? () => settings : settings;
  }

  protected get settings(): string {
    return this.settingsOf();
  }

  /** The message being handled (a Parse or a Query, in the current group) may change the schema: what follows waits
   * for its answer, and then parses under the new schema epoch. */
  protected schemaMayChange(): void {
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
  protected mustWait(type: number, msg: Buffer): boolean {
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

  protected release(out: RewriteSink): void {
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
  protected lookup(s: Statement, isParse: boolean, out: RewriteSink, use = true): boolean {
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
  protected sqlStatement(cmd: Extract<SqlCommand, { kind: 'prepare' }>): Statement {
    return this.interner.intern(Buffer.from(cmd.body), Buffer.from(`sql:${cmd.types ?? ''}`), this.settings);
  }

  /**
   * `cached plan must not change result type` (0A000) for a statement the server had from before a DDL change: on a
   * direct connection the client's fresh Parse would have planned anew. Retried once, transparently, when nothing
   * of the group but the pooler's own replies reached the client, no other group is in flight and no transaction
   * block is open (the failed group rolled back whole); otherwise the error goes to the client and the statement is
   * closed and prepared again on this server at its next use.
   */
  protected takeOverError(slot: Slot, error: Buffer, delivered: boolean): boolean {
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
  protected mark(s: Statement): { statement: Statement; at?: number } {
    return this.groupLog ? { statement: s, at: this.at } : { statement: s };
  }

  // ---- server -> client ----

  /** A whole server message that may complete a slot (see REWRITER_WHOLE_TYPES); everything else passes by. */
  serverMessage(type: number, msg: Buffer, out: RewriteSink): void {
    if (type === BackendMessage.ReadyForQuery) this.lastStatus = msg[5]!;
    this.replies.serverMessage(type, msg, out);
  }

  protected nextGroup(): void {
    this.groupFresh = true;
    this.groupsSent++;
    this.groupSeq = this.server!.seq;
  }

  protected groupDone(out: RewriteSink): void {
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
    this.lane = [];
    if (!server || !this.settled || this.replay || this.groupsDone !== this.groupsSent || server.toClose.length > 0)
      return null;
    // The unnamed statement is answered by the lane only while a Parse of its text would find it now: under the
    // client's current settings and the schema epoch it was parsed in.
    const key = this.interner.key(this.settings);
    for (const [name, statement] of this.named) {
      if (server.peek(statement)?.state !== 'ready' || server.isStale(statement) || server.isClosing(statement))
        continue;
      if (name === '' && statement.settings !== key) continue;
      this.lane.push({ name, statement });
    }
    if (this.lane.length === 0) return null;
    if (this.lane.length > LANE_MAX_ENTRIES)
      this.lane = this.lane.sort((a, b) => b.statement.lastUsed - a.statement.lastUsed).slice(0, LANE_MAX_ENTRIES);
    return encodeLaneTable(this.lane);
  }

  /** The lane's answered groups: `counts[0]` Parses answered by the pooler; for entry i, `counts[1 + 3i]` its Binds,
   * `counts[2 + 3i]` Executes of portals bound to it and `counts[3 + 3i]` their microseconds. */
  laneUsed(counts: Float64Array, n: number): void {
    const lane = this.lane;
    this.lane = [];
    const server = this.server;
    if (!server) return;
    const now = Date.now();
    for (let i = 0; i < n && i < lane.length; i++) {
      const uses = counts[1 + 3 * i]!;
      const s = lane[i]!.statement;
      s.executions += counts[2 + 3 * i]!;
      s.execTimeUs += counts[3 + 3 * i]!;
      if (uses <= 0) continue;
      s.countUsed += uses;
      // Every lane use found the statement prepared on this server (the lane takes only confirmed ones).
      s.cacheHits += uses;
      s.lastUsed = now;
      server.use(s);
    }
    const hits = counts[0]!;
    const unnamed = hits > 0 ? lane.find((e) => e.name === '')?.statement : undefined;
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

  /** What one client message becomes (see rewriter.ts). */
  protected abstract handle(type: number, msg: Buffer, out: RewriteSink): void;
}
