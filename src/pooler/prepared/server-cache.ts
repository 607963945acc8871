// The statements prepared on one server connection under their pooler-owned names: an LRU whose evictions are closed on the server with the next Sync.
import type { Interner, Statement } from './interner.js';

/** `ready`: PostgreSQL answered ParseComplete; `pending`: the Parse is on its way and may still fail. */
export type PreparedState = 'ready' | 'pending';

export interface Entry {
  state: PreparedState;
  /** `seq` when it was added: DISCARD ALL forgets only what the server had when it ran. */
  seq: number;
}

export class ServerStatements {
  /** Oldest use first (a use moves a statement to the end). */
  private readonly prepared = new Map<Statement, Entry>();
  /** Counts additions. */
  seq = 0;
  /** Evicted statements to Close on the server before its next Sync; each still holds a reference. */
  readonly toClose: Statement[] = [];
  /** Closes sent and not yet answered. */
  private readonly closing = new Set<Statement>();
  hits = 0;
  misses = 0;

  constructor(private readonly interner: Interner, private capacity: number) {}

  get size(): number {
    return this.prepared.size;
  }

  /** The statement's entry here (and marks it recently used), or undefined when the server lacks it. */
  use(s: Statement): Entry | undefined {
    let entry = this.prepared.get(s);
    if (entry === undefined) {
      // Evicted, but its Close has not gone out: it is still there; keep it (taking back a slot from the oldest).
      const closing = this.toClose.indexOf(s);
      if (closing < 0) return undefined;
      this.toClose.splice(closing, 1);
      entry = { state: 'ready', seq: ++this.seq };
      this.prepared.set(s, entry);
      this.evict();
      return entry;
    }
    this.prepared.delete(s);
    this.prepared.set(s, entry);
    return entry;
  }

  /** The statement's entry here, without counting a use. */
  peek(s: Statement): Entry | undefined {
    return this.prepared.get(s);
  }

  /** Records a Parse sent under the statement's name (the server lacks it: `use` said so); evictions queue in `toClose`. */
  add(s: Statement): void {
    this.interner.ref(s);
    this.prepared.set(s, { state: 'pending', seq: ++this.seq });
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
    if (this.prepared.delete(s)) this.interner.unref(s);
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
    this.interner.unref(s);
  }

  /** PostgreSQL skipped the Close (an earlier error in its group): the server still has the statement. */
  reopen(s: Statement): void {
    this.closing.delete(s);
    if (this.prepared.has(s)) return this.interner.unref(s); // prepared again in the meantime: one reference is enough
    this.prepared.set(s, { state: 'ready', seq: ++this.seq });
    this.evict();
  }

  /** DISCARD ALL / DEALLOCATE ALL ran on the server: it lost what it had at `seq` (Parses pipelined after it stay). */
  clearUpTo(seq: number): void {
    for (const [s, entry] of this.prepared) {
      if (entry.seq > seq) continue;
      this.prepared.delete(s);
      this.interner.unref(s);
    }
  }

  /** The server connection is closing or reconnecting: it has nothing any more. */
  clear(): void {
    for (const s of this.prepared.keys()) this.interner.unref(s);
    this.prepared.clear();
    for (const st of this.toClose.splice(0)) this.interner.unref(st);
    for (const st of this.closing) this.interner.unref(st);
    this.closing.clear();
  }

  resize(capacity: number): void {
    this.capacity = capacity;
  }

  statements(): IterableIterator<Statement> {
    return this.prepared.keys();
  }
}
