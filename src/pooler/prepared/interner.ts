// Query texts interned pool-wide: one copy of each (text, parameter types, planner settings, schema epoch), found by a 64-bit hash and compared in full, freed when unused.
import { SchemaEpoch } from './schema-epoch.js';

/** One distinct statement: what a Parse carried, and the name it has on every server that prepared it. */
export interface Statement {
  /** 16 hex digits of the 64-bit hash of text, types and settings. */
  readonly hash: string;
  /** Server-side name: `tp_<hash>`, with a suffix for a second text under the same hash. */
  readonly name: string;
  readonly query: Buffer;
  readonly types: Buffer;
  /** The planner settings the client had (its search_path) and the schema epoch (Interner.key): the same text under
   * other settings, or after a schema change, is another statement. */
  readonly settings: string;
  /** Client maps and server caches holding it; at 0 it waits in the idle list until it is used again or pushed out. */
  refs: number;
  /** Parse and Bind uses, for SHOW PREPARED_STATEMENTS. */
  countUsed: number;
  lastUsed: number;
  /** Executions that completed (Execute answered by CommandComplete, EmptyQueryResponse or PortalSuspended; SQL
   * EXECUTE answered without error) and their time from the pooler sending them to that answer, in microseconds. */
  executions: number;
  execTimeUs: number;
  /** Uses (Parse or Bind) that found it prepared on the server, and uses that had to prepare it there first. */
  cacheHits: number;
  cacheMisses: number;
}

export type StatementHash = (query: Buffer, types: Buffer, settings: string) => string;

const M1 = 0x85ebca6b;
const M2 = 0xc2b2ae35;

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, M1);
  h ^= h >>> 13;
  h = Math.imul(h, M2);
  return (h ^ (h >>> 16)) >>> 0;
}

function lanes(buf: Buffer, a: number, b: number): [number, number] {
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return [a, b];
}

/** `lanes` over a string's UTF-16 code units (settings are short: no Buffer made per Parse). */
function textLanes(text: string, a: number, b: number): [number, number] {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return [a, b];
}

/** Two independent 32-bit lanes (FNV-1a and a multiply-xorshift) over text, types and settings, each finished with murmur3's fmix. */
export const hashStatement: StatementHash = (query, types, settings) => {
  let [a, b] = lanes(query, 0x811c9dc5, 0x9747b28c ^ query.length);
  [a, b] = lanes(types, a ^ 0xff, b ^ 0xff);
  if (settings) [a, b] = textLanes(settings, a ^ 0xfe, b ^ 0xfe);
  return (
    fmix(a).toString(16).padStart(8, '0') +
    fmix(b ^ a)
      .toString(16)
      .padStart(8, '0')
  );
};

export interface InternerOptions {
  /** Unreferenced statements kept for reuse (prepared_statements_cache_size). */
  idleCapacity: number;
  /** The database's schema changes (schema-epoch.ts); a new one of its own when absent. */
  schema?: SchemaEpoch;
  /** Test hook: a hash function that collides on purpose. */
  hash?: StatementHash;
}

export class Interner {
  private readonly byHash = new Map<string, Statement[]>();
  /** Unreferenced statements, oldest first. */
  private readonly idle = new Set<Statement>();
  private readonly hash: StatementHash;
  private collisions = 0;
  /** Bytes of text and types held. */
  bytes = 0;
  count = 0;

  private readonly schema: SchemaEpoch;

  constructor(private readonly opts: InternerOptions) {
    this.hash = opts.hash ?? hashStatement;
    this.schema = opts.schema ?? new SchemaEpoch();
  }

  /** A statement's `settings` as interned now: the client's planner settings and the schema epoch (a statement
   * interned before a schema change is another one than the same text after it). */
  key(settings: string): string {
    const epoch = this.schema.value;
    if (epoch === 0) return settings;
    // One string per (settings, epoch), not one per Parse: clients of a pool share both almost always.
    if (settings !== this.keyFor || epoch !== this.keyEpoch) {
      this.keyFor = settings;
      this.keyEpoch = epoch;
      this.lastKey = `${settings}\0${epoch}`;
    }
    return this.lastKey;
  }

  private keyFor = '';
  private keyEpoch = 0;
  private lastKey = '';

  /** A schema change was seen on the database: from now on every text is a new statement (parsed anew on each
   * server); what clients already named keeps its statement, as their names keep theirs on a direct connection. */
  schemaChanged(): void {
    this.schema.bump();
  }

  /** The statement for these bytes (copied when new); a new or idle one has refs 0 until `ref`. */
  intern(query: Buffer, types: Buffer, clientSettings: string): Statement {
    return this.internKeyed(query, types, this.key(clientSettings));
  }

  /** The statement for a server connection a takeover moved here (takeover-clients.ts): `settings` as the old
   * process keyed it (Statement.settings, its schema epoch included), so the name is the one the server holds unless
   * another text took that hash here first (the caller compares the names). */
  internKeyed(query: Buffer, types: Buffer, settings: string): Statement {
    const hash = this.hash(query, types, settings);
    const chain = this.byHash.get(hash);
    if (chain) {
      for (const s of chain) if (s.settings === settings && s.query.equals(query) && s.types.equals(types)) return s;
    }
    const s: Statement = {
      hash,
      name: chain ? `tp_${hash}_${++this.collisions}` : `tp_${hash}`,
      query: Buffer.from(query),
      types: Buffer.from(types),
      settings,
      refs: 0,
      countUsed: 0,
      lastUsed: 0,
      executions: 0,
      execTimeUs: 0,
      cacheHits: 0,
      cacheMisses: 0,
    };
    if (chain) chain.push(s);
    else this.byHash.set(hash, [s]);
    this.bytes += s.query.length + s.types.length;
    this.count++;
    this.park(s);
    return s;
  }

  ref(s: Statement): void {
    if (s.refs++ === 0) this.idle.delete(s);
  }

  unref(s: Statement): void {
    if (--s.refs === 0) this.park(s);
  }

  private park(s: Statement): void {
    this.idle.add(s);
    while (this.idle.size > this.opts.idleCapacity) {
      const oldest = this.idle.values().next().value as Statement;
      this.idle.delete(oldest);
      this.drop(oldest);
    }
  }

  private drop(s: Statement): void {
    const chain = this.byHash.get(s.hash)!;
    const i = chain.indexOf(s);
    chain.splice(i, 1);
    if (chain.length === 0) this.byHash.delete(s.hash);
    this.bytes -= s.query.length + s.types.length;
    this.count--;
  }

  /** RESET INTERNER: forgets every unreferenced statement; returns how many. */
  resetIdle(): number {
    const n = this.idle.size;
    for (const s of this.idle) this.drop(s);
    this.idle.clear();
    return n;
  }

  get idleCount(): number {
    return this.idle.size;
  }

  *statements(): IterableIterator<Statement> {
    for (const chain of this.byHash.values()) yield* chain;
  }
}
