// Search hits packed for the trip from a shard thread to the HTTP thread (bytes, moved not copied), and
// their k-way merge there; the response is built from the stored document bytes, never parsed.
import { isUtf8 } from 'node:buffer';
import { hitWriting } from '../../native/index.js';
import { HIT_BYTES } from '../../native/hit-writer.js';
import type { DocRun } from '../storage/fraction-view.js';
import { ISO_TIME_BYTES, isoTime, writeIsoTime } from './hit-json.js';
import { giveBack, takeScratch } from './scratch.js';

export interface ShardHit {
  id: string;
  time: number;
  /** {"id", "data", "time"} as the API returns it, pipes applied. */
  json: string;
}

/** Hits as one UTF-8 byte array and three arrays: far cheaper to pass between threads than one object per hit. */
export interface PackedHits {
  times: Float64Array;
  /** The ids, 24 characters each, concatenated. */
  ids: string;
  /** The hits' JSON, UTF-8, concatenated; hit i is json[offs[i] .. offs[i + 1]). */
  json: Uint8Array;
  offs: Uint32Array;
}

const enc = new TextEncoder();

export function packHits(hits: ShardHit[]): PackedHits {
  const w = new HitWriter(hits.length);
  for (const h of hits) w.addJson(h.id, h.time, Buffer.from(h.json));
  return w.finish();
}

function text(p: PackedHits, i: number): string {
  return Buffer.from(p.json.buffer, p.json.byteOffset, p.json.byteLength).toString('utf8', p.offs[i]!, p.offs[i + 1]!);
}

export function unpackHit(p: PackedHits, i: number): ShardHit {
  return { id: p.ids.slice(i * 24, i * 24 + 24), time: p.times[i]!, json: text(p, i) };
}

export function unpackHits(p: PackedHits): ShardHit[] {
  return Array.from(p.times, (_, i) => unpackHit(p, i));
}

/** Builds the packed hits of one shard: {"id":"<id>","data":<document bytes>,"time":"<ISO time>"} each. */
export class HitWriter {
  private buf: Buffer;
  private used = 0;
  private n = 0;
  private times: Float64Array;
  /** Hit i's start in buf; one more slot for the end. */
  private offs: Uint32Array;
  /** The ids, 24 ASCII bytes each (made into one string at the end). */
  private hex: Buffer;

  // Uninitialized (no zero fill): only bytes [0, used) are ever read, each through a view bounded by offs.
  // `bytes`: the hits' size when the caller knows it (else 256 a hit, grown as needed). The buffers are scratch
  // (search/scratch.ts): the JSON's is given back by whoever last reads the hits, when it knows.
  constructor(expected: number, bytes = expected * 256) {
    this.buf = takeScratch(Math.max(256, bytes));
    this.times = new Float64Array(Math.max(1, expected));
    this.offs = new Uint32Array(Math.max(1, expected) + 1);
    this.hex = takeScratch(24 * Math.max(1, expected));
  }

  private reserve(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const next = takeScratch(Math.max(this.buf.length * 2, this.used + n));
    next.set(this.buf.subarray(0, this.used));
    giveBack(this.buf);
    this.buf = next;
  }

  /** Room for `k` more hits in times, offs and the ids. */
  private room(k: number): void {
    if (this.n + k <= this.times.length) return;
    const size = Math.max(this.times.length * 2, this.n + k);
    const times = new Float64Array(size);
    times.set(this.times.subarray(0, this.n));
    this.times = times;
    const offs = new Uint32Array(size + 1);
    offs.set(this.offs.subarray(0, this.n));
    this.offs = offs;
    const hex = takeScratch(24 * size);
    this.hex.copy(hex, 0, 0, 24 * this.n);
    giveBack(this.hex);
    this.hex = hex;
  }

  private ascii(s: string): void {
    const b = this.buf;
    let p = this.used;
    for (let i = 0; i < s.length; i++) b[p++] = s.charCodeAt(i);
    this.used = p;
  }

  /** Starts hit n: its time, offset and id. */
  private begin(id: string, time: number): void {
    this.room(1);
    this.times[this.n] = time;
    this.offs[this.n] = this.used;
    const h = this.hex;
    for (let i = 0, at = 24 * this.n; i < 24; i++) h[at + i] = id.charCodeAt(i);
    this.n++;
  }

  /** A hit whose document is `data` (stored JSON bytes, written as they are). */
  add(id: string, time: number, data: Uint8Array): void {
    this.addRef(id, time, data, 0, data.length);
  }

  /**
   * As add(), the document being src[start .. end). `utf8`: the caller knows the bytes are valid UTF-8 (a sealed
   * fraction checks each block once); otherwise they are checked here.
   */
  addRef(id: string, time: number, src: Uint8Array, start: number, end: number, utf8 = false): void {
    const len = end - start;
    const doc = new Uint8Array(src.buffer, src.byteOffset + start, len);
    // Documents are valid UTF-8 since ingest repairs them; one stored by an older version may not be.
    if (!utf8 && !isUtf8(doc)) {
      this.addText(id, time, Buffer.from(src.buffer, src.byteOffset + start, len).toString('utf8'));
      return;
    }
    this.reserve(7 + id.length + 9 + len + 9 + ISO_TIME_BYTES + 2 + 16);
    this.begin(id, time);
    this.ascii('{"id":"');
    this.ascii(id);
    this.ascii('","data":');
    this.buf.set(doc, this.used);
    this.used += len;
    this.ascii(',"time":"');
    if (writeIsoTime(time, this.buf, this.used)) this.used += ISO_TIME_BYTES;
    else {
      const iso = isoTime(time);
      this.reserve(iso.length + 2);
      this.ascii(iso);
    }
    this.ascii('"}');
  }

  /**
   * `count` neighbouring documents of one sealed block, from local `local` on, `step` 1 (ascending) or -1: one
   * native call writes them all. False, writing nothing, when the block is not known to be UTF-8 or a time is
   * before 1970 or past 9999 (the caller then adds them one by one).
   */
  addRun(run: DocRun, local: number, count: number, step: 1 | -1): boolean {
    if (!run.utf8) return false;
    const b = local - run.first;
    const last = b + (count - 1) * step;
    const lo = step > 0 ? b : last;
    const hi = step > 0 ? last : b;
    this.reserve(run.offsets[hi + 1]! - run.offsets[lo]! + HIT_BYTES * count);
    this.room(count);
    const end = hitWriting.writeHits(
      this.buf,
      this.used,
      run.raw,
      run.offsets,
      b,
      count,
      step,
      run.ids,
      run.times,
      run.first,
      this.hex,
      this.offs,
      this.times,
      this.n,
    );
    if (end < 0) return false;
    this.used = end;
    this.n += count;
    return true;
  }

  /** A hit already rendered as JSON bytes. */
  addJson(id: string, time: number, json: Uint8Array): void {
    this.reserve(json.length);
    this.begin(id, time);
    this.buf.set(json, this.used);
    this.used += json.length;
  }

  /** A hit whose document text is rewritten (pipes applied). */
  addText(id: string, time: number, data: string): void {
    this.add(id, time, enc.encode(data));
  }

  finish(): PackedHits {
    const n = this.n;
    this.offs[n] = this.used;
    // The buffer has an ArrayBuffer of its own: it is moved to the HTTP thread whole, not copied.
    const json = this.buf.subarray(0, this.used);
    const ids = this.hex.toString('latin1', 0, 24 * n);
    giveBack(this.hex);
    return {
      times: n === this.times.length ? this.times : this.times.slice(0, n),
      ids,
      json,
      offs: n + 1 === this.offs.length ? this.offs : this.offs.slice(0, n + 1),
    };
  }
}

/** The hits of a search across shards, in order: references into each shard's packed hits. */
export class HitList {
  /** `dropped`: copies of an id already listed that the merge left out (replicas, a batch retried elsewhere). */
  constructor(
    readonly parts: PackedHits[],
    readonly part: Uint16Array,
    readonly index: Uint32Array,
    readonly dropped = 0,
  ) {}

  get length(): number {
    return this.part.length;
  }

  /** Where hit i lives: its shard's packed hits and its index there (part[i] and index[i] without the pair). */
  locate(i: number): [PackedHits, number] {
    return [this.parts[this.part[i]!]!, this.index[i]!];
  }

  get(i: number): ShardHit {
    return unpackHit(this.parts[this.part[i]!]!, this.index[i]!);
  }

  /** Hit i as {id, time, data}: data is the stored document's bytes inside the packed JSON (no copy). */
  doc(i: number): { id: string; time: number; data: Uint8Array } {
    const p = this.parts[this.part[i]!]!;
    const k = this.index[i]!;
    const time = p.times[k]!;
    // {"id":"<24>","data": is 40 bytes; ,"time":"<iso>"} is 11 + the ISO text.
    const data = p.json.subarray(p.offs[k]! + 40, p.offs[k + 1]! - 11 - isoTime(time).length);
    return { id: p.ids.slice(k * 24, k * 24 + 24), time, data };
  }

  slice(from: number, to: number): ShardHit[] {
    const out: ShardHit[] = [];
    for (let i = Math.max(0, from); i < Math.min(to, this.length); i++) out.push(this.get(i));
    return out;
  }

  /**
   * `head`, hits [from, to) comma-separated (copied from the shards' bytes), then `tail`: one buffer. Hits that
   * follow each other in one part (all of them, when one pass over sealed fractions answered) are copied by one
   * joinHits call.
   */
  jsonBytes(from: number, to: number, head = '', tail = ''): Buffer {
    const lo = Math.max(0, from);
    const hi = Math.min(to, this.length);
    const headLen = Buffer.byteLength(head);
    let size = headLen + Buffer.byteLength(tail) + Math.max(0, hi - lo - 1);
    for (let i = lo; i < hi; i++) {
      const p = this.parts[this.part[i]!]!;
      const k = this.index[i]!;
      size += p.offs[k + 1]! - p.offs[k]!;
    }
    // Scratch: the caller may give it back once the answer is written (search/scratch.ts).
    const out = takeScratch(size);
    let pos = headLen === head.length ? writeAscii(out, head, 0) : out.write(head, 0);
    for (let i = lo; i < hi;) {
      const part = this.part[i]!;
      const k = this.index[i]!;
      let n = 1;
      while (i + n < hi && this.part[i + n] === part && this.index[i + n] === k + n) n++;
      if (i > lo) out[pos++] = 0x2c;
      const p = this.parts[part]!;
      pos = hitWriting.joinHits(out, pos, p.json, p.offs, k, k + n);
      i += n;
    }
    out.write(tail, pos);
    return out;
  }
}

/** An ASCII string's bytes at out[at ..] (short heads: cheaper than a Buffer.write call); the end. */
function writeAscii(out: Uint8Array, s: string, at: number): number {
  for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  return at + s.length;
}

/**
 * The best `limit` hits of shards whose hits are each already in order: a k-way merge. A hit whose id equals
 * the one before it (the same document from two replicas or a retried write) is dropped.
 */
export function mergeHitList(parts: PackedHits[], limit: number, desc: boolean): HitList {
  if (parts.length === 1) {
    // One part (one pass over sealed fractions, or one shard): its hits in order, nothing to compare.
    const n = Math.max(0, Math.min(limit, parts[0]!.times.length));
    const index = new Uint32Array(n);
    for (let i = 0; i < n; i++) index[i] = i;
    return new HitList(parts, new Uint16Array(n), index);
  }
  const at = parts.map(() => 0);
  let avail = 0;
  for (const p of parts) avail += p.times.length;
  const n = Math.max(0, Math.min(limit, avail));
  const part = new Uint16Array(n);
  const index = new Uint32Array(n);
  let lastId = '';
  let o = 0;
  let dropped = 0;
  while (o < n) {
    let best = -1;
    for (let s = 0; s < parts.length; s++) {
      const p = parts[s]!;
      const i = at[s]!;
      if (i >= p.times.length) continue;
      if (best < 0) {
        best = s;
        continue;
      }
      const b = parts[best]!;
      const j = at[best]!;
      const dt = p.times[i]! - b.times[j]!;
      const cmp = dt !== 0 ? dt : p.ids.slice(i * 24, i * 24 + 24) < b.ids.slice(j * 24, j * 24 + 24) ? -1 : 1;
      if (desc ? cmp > 0 : cmp < 0) best = s;
    }
    if (best < 0) break;
    const k = at[best]!++;
    if (parts.length > 1) {
      const id = parts[best]!.ids.slice(k * 24, k * 24 + 24);
      if (id === lastId) {
        dropped++;
        continue;
      }
      lastId = id;
    }
    part[o] = best;
    index[o++] = k;
  }
  return new HitList(parts, o === n ? part : part.slice(0, o), o === n ? index : index.slice(0, o), dropped);
}

export function mergeHits(parts: PackedHits[], limit: number, desc: boolean): ShardHit[] {
  const list = mergeHitList(parts, limit, desc);
  return list.slice(0, list.length);
}
