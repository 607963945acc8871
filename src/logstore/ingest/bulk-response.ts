// The Elasticsearch bulk answer, written as a stream of bounded chunks (never whole in memory) and shaped by
// `filter_path` as Elasticsearch shapes it: `errors,items.*.error,items.*.status` (Logstash, Beats) and the like.
import { type FilterPath, fieldVerdict, filterPart } from '../es/filter-path.js';
import { type BulkItems, type BulkOp, OPS } from './bulk-items.js';

export interface BulkOutcome {
  items: BulkItems;
  errors: boolean;
  took: number;
  /** Bytes of item state this bulk holds in the shared budget until its answer is written. */
  held?: number;
}

/** Where the answer goes: write() returns false when the caller must wait (as a socket's write does). */
export interface ChunkSink {
  write(chunk: Buffer): boolean | Promise<boolean>;
  /** Resolves when the sink takes more (after write() returned false). */
  drained(): Promise<void>;
}

const CHUNK = 64 * 1024;
const COMMA = Buffer.from(',');
/** Item fields in the order Elasticsearch writes them. */
const FIELDS = ['_index', '_id', '_version', 'result', 'status', 'error'] as const;
type Field = (typeof FIELDS)[number];
type Kind = 'created' | 'noop' | 'error';

/** Which fields an item of one action keeps (true: whole; a FilterPath: `error` in part). */
type ItemPlan = Record<Field, boolean | FilterPath> | null;

function verdictOf(f: FilterPath | null, names: string[], scalar: boolean): boolean | FilterPath {
  if (!f) return true;
  const v = fieldVerdict(f, names);
  if (v === 'keep') return true;
  if (v === 'drop') return false;
  // A path that goes below a scalar: an include path selects nothing there, an exclude path removes nothing.
  if (scalar) return v.include === null;
  return v;
}

function planFor(f: FilterPath | null, op: BulkOp): ItemPlan {
  const plan = {} as Record<Field, boolean | FilterPath>;
  let any = false;
  for (const field of FIELDS) {
    plan[field] = verdictOf(f, ['items', op, field], field !== 'error');
    if (plan[field] !== false) any = true;
  }
  return any ? plan : null;
}

/** True when a string goes between JSON quotes as it is (no quote, backslash or control character). */
function plainText(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/**
 * Writes the answer of a bulk. Items are written in order; a stored item answers 201 "created" with its id
 * (the client's, or the one the shard made), a kept one 200 "noop", a failed one its status and error.
 */
export async function writeBulkResponse(out: BulkOutcome, sink: ChunkSink, filter: FilterPath | null): Promise<void> {
  const { items } = out;
  let buf = Buffer.allocUnsafe(CHUNK);
  let pos = 0;
  const flush = async () => {
    if (pos === 0) return;
    const chunk = buf.subarray(0, pos);
    buf = Buffer.allocUnsafe(CHUNK);
    pos = 0;
    if (!(await sink.write(chunk))) await sink.drained();
  };
  const put = async (b: Buffer) => {
    if (pos + b.length > buf.length) {
      await flush();
      if (b.length > buf.length) {
        if (!(await sink.write(b))) await sink.drained();
        return;
      }
    }
    pos += b.copy(buf, pos);
  };

  let topFields = 0;
  const top = (name: string, value: string): Buffer => Buffer.from(`${topFields++ ? ',' : '{'}"${name}":${value}`);
  const tookV = verdictOf(filter, ['took'], true);
  if (tookV) await put(top('took', String(out.took)));
  const errorsV = verdictOf(filter, ['errors'], true);
  if (errorsV) await put(top('errors', String(out.errors)));

  const plans: (ItemPlan | undefined)[] = [];
  const planOf = (code: number): ItemPlan =>
    plans[code] !== undefined ? plans[code]! : (plans[code] = planFor(filter, OPS[code]!));
  // Constant bytes of an item around its id, per (action, index, kind): [before the id, after it]; found by
  // number (index slot, action code, noop bit), not by a string key: this runs once per item.
  const frames: ([Buffer, Buffer | null] | undefined)[] = [];
  const frameOf = (
    code: number,
    slot: number,
    kind: 'created' | 'noop',
    plan: NonNullable<ItemPlan>,
  ): [Buffer, Buffer | null] => {
    const key = (slot * 4 + code) * 2 + (kind === 'noop' ? 1 : 0);
    let fr = frames[key];
    if (fr) return fr;
    const op = OPS[code]!;
    const parts: string[] = [];
    if (plan._index) parts.push(`"_index":${JSON.stringify(items.indexName(slot))}`);
    const withId = plan._id === true;
    const tail: string[] = [];
    if (plan._version) tail.push('"_version":1');
    if (plan.result) tail.push(`"result":"${kind === 'noop' ? 'noop' : 'created'}"`);
    if (plan.status) tail.push(`"status":${kind === 'noop' ? 200 : 201}`);
    if (withId) {
      const head = `{"${op}":{${parts.length ? parts.join(',') + ',' : ''}"_id":"`;
      fr = [Buffer.from(head), Buffer.from(`"${tail.length ? ',' + tail.join(',') : ''}}}`)];
    } else {
      const all = [...parts, ...tail];
      fr = [Buffer.from(all.length ? `{"${op}":{${all.join(',')}}}` : ''), null];
    }
    frames[key] = fr;
    return fr;
  };
  const errorItem = (i: number, op: BulkOp, plan: NonNullable<ItemPlan>): string => {
    const e = items.error(i)!;
    const parts: string[] = [];
    if (plan._index) parts.push(`"_index":${JSON.stringify(items.index(i))}`);
    if (plan._id) parts.push(`"_id":${JSON.stringify(items.id(i))}`);
    if (plan.status) parts.push(`"status":${e.status}`);
    if (plan.error) {
      const err =
        plan.error === true
          ? { type: e.type, reason: e.reason }
          : filterPart({ type: e.type, reason: e.reason }, plan.error);
      if (err !== undefined) parts.push(`"error":${JSON.stringify(err)}`);
    }
    return parts.length ? `{"${op}":{${parts.join(',')}}}` : '';
  };

  const itemsV = verdictOf(filter, ['items'], false);
  let written = 0;
  if (itemsV) {
    const n = items.count;
    // Most bulks have no failed, kept or client-id item: then no item needs a lookup in those maps.
    const anyFailed = items.failed > 0;
    const anyKept = items.kept.size > 0;
    const anyClientId = items.clientIds.size > 0;
    for (let i = 0; i < n; i++) {
      const code = items.opCode(i);
      const plan = planOf(code);
      if (!plan) continue;
      const kind: Kind = anyFailed && items.error(i) ? 'error' : anyKept && items.kept.has(i) ? 'noop' : 'created';
      if (kind === 'error') {
        const s = errorItem(i, OPS[code]!, plan);
        if (!s) continue;
        if (written++ === 0) await put(top('items', '['));
        else await put(COMMA);
        await put(Buffer.from(s));
        continue;
      }
      const frame = frameOf(code, items.indexOf(i), kind, plan);
      const head = frame[0];
      if (head.length === 0) continue;
      const tail = frame[1];
      const cid = tail && anyClientId ? items.id(i) : null;
      const idText = cid === null ? null : plainText(cid) ? cid : JSON.stringify(cid).slice(1, -1);
      // An item is at most a few KiB (an id is at most 512 bytes, 3 KiB escaped): it always fits a fresh chunk.
      if (pos + 1 + head.length + (idText === null ? 24 : Buffer.byteLength(idText)) + (tail?.length ?? 0) > buf.length)
        await flush();
      if (written++ === 0) {
        await put(top('items', '['));
        if (pos + head.length + (idText === null ? 24 : Buffer.byteLength(idText)) + (tail?.length ?? 0) > buf.length)
          await flush();
      } else buf[pos++] = 0x2c;
      buf.set(head, pos);
      pos += head.length;
      if (!tail) continue;
      if (idText !== null) pos += buf.write(idText, pos);
      else {
        items.writeGenerated(i, buf, pos);
        pos += 24;
      }
      buf.set(tail, pos);
      pos += tail.length;
    }
  }
  if (written) await put(Buffer.from(']'));
  await put(Buffer.from(topFields ? '}' : '{}'));
  await flush();
}

/** The whole answer as one buffer (small bulks and tests). */
export async function bulkResponseBytes(out: BulkOutcome, filter: FilterPath | null = null): Promise<Buffer> {
  const parts: Buffer[] = [];
  await writeBulkResponse(out, { write: (c) => (parts.push(c), true), drained: async () => undefined }, filter);
  return Buffer.concat(parts);
}
