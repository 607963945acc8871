// The statements prepared on one server connection under their pooler-owned names: an LRU whose evictions are closed on the server with the next Sync.
import type { Interner, Statement } from './interner.js';

/** `ready`: PostgreSQL answered ParseComplete; `pending`: the Parse is on its way and may still fail. */
export type PreparedState = 'ready' | 'pending';

export interface Entry {
  state: PreparedState;
  /** `seq` when it was added: DISCARD ALL forgets only what the server had when it ran. */
  seq: number;
  /** Evicted, and a DISCARD ALL / DEALLOCATE ALL has since removed it from the server anyway. */
  gone?: boolean;
}

export class ServerStatements {
  /** Oldest use first (a use moves a statement to the end). */
  private readonly prepared = new Map<Statement, Entry>();
  /** Evicted statements, queued (`toClose`) or with their Close sent (`closing`); each holds its reference until the Close is answered. */
  private readonly evicted = new Map<Statement, Entry>();
  /** Evicted, to Close before the server's next Sync, oldest first. */
  readonly toClose: Statement[] = [];
  /** Closes sent and not yet answered. */
  private readonly closing = new Set<Statement>();
  /** Prepared here before a DDL change broke their plan (0A000): closed and prepared again at the next use. */
  private readonly stale = new Set<Statement>();
  /** The statement `use` moved to the end of `prepared` last; null once anything else changed the map (an addition
   * goes last too, and a statement removed and added again must be moved). */
  private last: Statement | null = null;
  /** Counts additions. */
  seq = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly interner: Interner,
    private capacity: number,
  ) {}

  get size(): number {
    return this.prepared.size;
  }

  /** The statement's entry here (and marks it recently used), or undefined when the server lacks it. */
  use(s: Statement): Entry | undefined {
    const entry = this.prepared.get(s);
    if (entry !== undefined) {
      // The most recently used already (a transaction's statements are used again and again): it stays last.
      if (s !== this.last) {
        this.prepared.delete(s);
        this.prepared.set(s, entry);
        this.last = s;
      }
      return entry;
    }
    // Evicted, but its Close has not gone out: it is still there; keep it (taking back a slot from the oldest).
    const queued = this.toClose.indexOf(s);
    const old = this.evicted.get(s);
    if (queued < 0 || !old || old.gone) return undefined;
    this.toClose.splice(queued, 1);
    this.evicted.delete(s);
    this.prepared.set(s, old);
    this.last = null;
    this.evict();
    return old;
  }

  /** The statement's entry here, without counting a use. */
  peek(s: Statement): Entry | undefined {
    return this.prepared.get(s);
  }

  /** The server answered a schema change (DDL): the pool's texts are parsed anew from now on (see Interner.key). */
  schemaChanged(): void {
    this.interner.schemaChanged();
  }

  /** Records a Parse sent under the statement's name (the server lacks it: `use` said so); evictions queue in `toClose`. */
  add(s: Statement): void {
    // An evicted copy that DISCARD ALL already removed needs no Close, and one must not follow this Parse.
    const queued = this.toClose.indexOf(s);
    if (queued >= 0 && this.evicted.get(s)?.gone) {
      this.toClose.splice(queued, 1);
      this.evicted.delete(s);
      this.interner.unref(s);
    }
    this.interner.ref(s);
    this.prepared.set(s, { state: 'pending', seq: ++this.seq });
    this.last = null;
    this.evict();
  }

  /**
   * Queues the least recently used statements past the capacity for Close. Only confirmed ones: a Parse still
   * unanswered may fail, and a Close skipped after an error must find the statement still there (`reopen`).
   * Unanswered ones wait for their answer, so a long pipeline may exceed the capacity for a while.
   */
  private evict(): void {
    if (this.prepared.size <= this.capacity) return;
    for (const [s, entry] of this.prepared) {
      if (entry.state !== 'ready') continue;
      this.prepared.delete(s);
      this.last = null;
      this.evicted.set(s, entry);
      this.toClose.push(s);
      if (this.prepared.size <= this.capacity) return;
    }
  }

  confirm(s: Statement): void {
    const entry = this.prepared.get(s);
    if (!entry) return;
    entry.state = 'ready';
    this.evict();
  }

  /** The Parse failed: the server does not have it. */
  remove(s: Statement): void {
    this.stale.delete(s);
    this.last = null;
    if (this.prepared.delete(s)) this.interner.unref(s);
  }

  markStale(s: Statement): void {
    if (this.prepared.has(s)) this.stale.add(s);
  }

  isStale(s: Statement): boolean {
    return this.stale.has(s);
  }

  /** A Close of a stale statement was skipped after an error: the server still has the old one. */
  restoreStale(s: Statement): void {
    if (this.prepared.has(s)) return;
    this.interner.ref(s);
    this.prepared.set(s, { state: 'ready', seq: ++this.seq });
    this.last = null;
    this.stale.add(s);
  }

  /** Takes the queued Closes to send; each keeps its reference until `closedOne` or `reopen`. */
  takeClosing(): Statement[] {
    const sent = this.toClose.splice(0);
    for (const s of sent) this.closing.add(s);
    return sent;
  }

  /** A Close of it is on its way: whether the server still has it is not known yet. */
  isClosing(s: Statement): boolean {
    return this.closing.has(s);
  }

  /** PostgreSQL answered the Close. */
  closedOne(s: Statement): void {
    this.closing.delete(s);
    this.evicted.delete(s);
    this.interner.unref(s);
  }

  /** PostgreSQL skipped the Close (an earlier error in its group): the server still has the statement, as it was. */
  reopen(s: Statement): void {
    this.closing.delete(s);
    const entry = this.evicted.get(s);
    this.evicted.delete(s);
    if (!entry || entry.gone || this.prepared.has(s)) return this.interner.unref(s);
    this.prepared.set(s, entry);
    this.last = null;
    this.evict();
  }

  /** DISCARD ALL / DEALLOCATE ALL ran on the server: it lost what it had at `seq` (Parses pipelined after it stay). */
  clearUpTo(seq: number): void {
    for (const [s, entry] of this.prepared) {
      if (entry.seq > seq) continue;
      this.stale.delete(s);
      this.prepared.delete(s);
      this.last = null;
      this.interner.unref(s);
    }
    for (const entry of this.evicted.values()) if (entry.seq <= seq) entry.gone = true;
  }

  /** The server connection is closing or reconnecting: it has nothing any more. */
  clear(): void {
    for (const s of this.prepared.keys()) this.interner.unref(s);
    for (const s of this.evicted.keys()) this.interner.unref(s);
    this.prepared.clear();
    this.last = null;
    this.evicted.clear();
    this.toClose.length = 0;
    this.closing.clear();
    this.stale.clear();
  }

  resize(capacity: number): void {
    this.capacity = capacity;
    this.evict();
  }

  statements(): IterableIterator<Statement> {
    return this.prepared.keys();
  }

  /** What the server holds, oldest use first, for a takeover to move it (takeover-clients.ts); null while a Parse
   * is unanswered or a Close is queued or unanswered (what the server holds is not settled). */
  settled(): { statement: Statement; stale: boolean }[] | null {
    if (this.toClose.length > 0 || this.closing.size > 0) return null;
    const out: { statement: Statement; stale: boolean }[] = [];
    for (const [s, entry] of this.prepared) {
      if (entry.state !== 'ready') return null;
      out.push({ statement: s, stale: this.stale.has(s) });
    }
    return out;
  }

  /** A statement the server held when a takeover moved it here: prepared and answered. */
  adopt(s: Statement, stale: boolean): void {
    this.interner.ref(s);
    this.prepared.set(s, { state: 'ready', seq: ++this.seq });
    this.last = null;
    if (stale) this.stale.add(s);
  }
}
