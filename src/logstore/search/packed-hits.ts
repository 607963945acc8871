// Search hits packed for the trip from a shard thread to the HTTP thread, and their k-way merge there.

export interface ShardHit {
  id: string;
  time: number;
  /** {"id", "data", "time"} as the API returns it, pipes applied. */
  json: string;
}

/** Hits in one string and three arrays: far cheaper to pass between threads than one object per hit. */
export interface PackedHits {
  times: Float64Array;
  /** The ids, 24 characters each, concatenated. */
  ids: string;
  /** The hits' JSON, concatenated; hit i is json.slice(offs[i], offs[i + 1]). */
  json: string;
  offs: Uint32Array;
}

export function packHits(hits: ShardHit[]): PackedHits {
  const offs = new Uint32Array(hits.length + 1);
  let p = 0;
  hits.forEach((h, i) => { offs[i] = p; p += h.json.length; });
  offs[hits.length] = p;
  return { times: Float64Array.from(hits, (h) => h.time), ids: hits.map((h) => h.id).join(''), json: hits.map((h) => h.json).join(''), offs };
}

export function unpackHit(p: PackedHits, i: number): ShardHit {
  return { id: p.ids.slice(i * 24, i * 24 + 24), time: p.times[i]!, json: p.json.slice(p.offs[i]!, p.offs[i + 1]!) };
}

export function unpackHits(p: PackedHits): ShardHit[] {
  return Array.from(p.times, (_, i) => unpackHit(p, i));
}

/** The best `limit` hits of shards whose hits are each already in order: a k-way merge. */
export function mergeHits(parts: PackedHits[], limit: number, desc: boolean): ShardHit[] {
  const at = parts.map(() => 0);
  const out: ShardHit[] = [];
  while (out.length < limit) {
    let best = -1;
    for (let s = 0; s < parts.length; s++) {
      const p = parts[s]!;
      const i = at[s]!;
      if (i >= p.times.length) continue;
      if (best < 0) { best = s; continue; }
      const b = parts[best]!;
      const j = at[best]!;
      const dt = p.times[i]! - b.times[j]!;
      const cmp = dt !== 0 ? dt : p.ids.slice(i * 24, i * 24 + 24) < b.ids.slice(j * 24, j * 24 + 24) ? -1 : 1;
      if (desc ? cmp > 0 : cmp < 0) best = s;
    }
    if (best < 0) break;
    out.push(unpackHit(parts[best]!, at[best]!));
    at[best]!++;
  }
  return out;
}
