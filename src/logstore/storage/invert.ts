// Inverting the active index's forward stream (token ids of each document, in document order) into posting lists.

/** Posting lists of documents [docLo, docHi): token t's ids are data[start[t] .. start[t + 1]). */
export interface Segment {
  docLo: number;
  docHi: number;
  tokens: number;
  start: Uint32Array;
  data: Uint32Array;
}

/**
 * List starts of the token ids ents[e0, e1): start[t] .. start[t + 1] is token t's room. Each loop of this file is a
 * small function of its own: they run a few times per seal, so V8 compiles them on the spot, and a loop compiled
 * inside a larger function recompiles all of it (with the loops after it deoptimizing for want of feedback).
 */
function listStarts(ents: Uint32Array, e0: number, e1: number, tokens: number): Uint32Array {
  const start = new Uint32Array(tokens + 1);
  for (let i = e0; i < e1; i++) start[ents[i]! + 1]++;
  for (let t = 0; t < tokens; t++) start[t + 1] += start[t]!;
  return start;
}

/** Fills the lists of documents [lo, hi) in order (see invertRange). */
function fillRange(
  ents: Uint32Array,
  ends: Uint32Array,
  lo: number,
  hi: number,
  e0: number,
  pos: Uint32Array,
  data: Uint32Array,
): void {
  let i = e0;
  for (let d = lo; d < hi; d++) {
    const end = ends[d]!;
    for (; i < end; i++) data[pos[ents[i]!]!++] = d;
  }
}

/** Fills the lists in the order of `order` (see invertInOrder). */
function fillInOrder(
  ents: Uint32Array,
  ends: Uint32Array,
  order: Uint32Array,
  pos: Uint32Array,
  data: Uint32Array,
): void {
  const n = order.length;
  for (let d = 0; d < n; d++) {
    const old = order[d]!;
    const e1 = ends[old]!;
    for (let i = old === 0 ? 0 : ends[old - 1]!; i < e1; i++) data[pos[ents[i]!]!++] = d;
  }
}

/**
 * Documents [lo, hi) of the stream: `ends[d]` is where document d's token ids end in `ents`; `tokens` ids exist.
 * Each list comes out sorted (documents are visited in order).
 */
export function invertRange(ents: Uint32Array, ends: Uint32Array, tokens: number, lo: number, hi: number): Segment {
  const e0 = lo === 0 ? 0 : ends[lo - 1]!;
  const e1 = hi === 0 ? 0 : ends[hi - 1]!;
  const start = listStarts(ents, e0, e1, tokens);
  const data = new Uint32Array(e1 - e0);
  fillRange(ents, ends, lo, hi, e0, start.slice(0, tokens), data);
  return { docLo: lo, docHi: hi, tokens, start, data };
}

/**
 * Every document of the stream (order.length of them), renumbered: new id d is document order[d]. Documents are
 * visited in the new order, so each list comes out sorted in the new ids.
 */
export function invertInOrder(
  ents: Uint32Array,
  ends: Uint32Array,
  tokens: number,
  order: Uint32Array,
): { start: Uint32Array; data: Uint32Array } {
  const n = order.length;
  const total = n === 0 ? 0 : ends[n - 1]!;
  const start = listStarts(ents, 0, total, tokens);
  const data = new Uint32Array(total);
  fillInOrder(ents, ends, order, start.slice(0, tokens), data);
  return { start, data };
}
