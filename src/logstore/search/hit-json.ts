// A search hit as the JSON the API returns ({id, data, time}), built in the shard so the HTTP thread only joins.
import type { FieldsPipe } from '../query/ast.js';

/** Applies `| fields a, b` and `| fields except a, b` to one document's JSON text. */
export function applyPipes(data: string, pipes: readonly FieldsPipe[]): string {
  if (pipes.length === 0) return data;
  let doc = JSON.parse(data) as Record<string, unknown>;
  for (const p of pipes) {
    const names = new Set(p.names);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(doc)) if (names.has(k) !== p.except) out[k] = v;
    doc = out;
  }
  return JSON.stringify(doc);
}

export function hitJson(id: string, time: number, data: string, pipes: readonly FieldsPipe[]): string {
  return `{"id":"${id}","data":${applyPipes(data, pipes)},"time":"${new Date(time).toISOString()}"}`;
}
