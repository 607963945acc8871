// A search hit as the JSON the API returns ({id, data, time}), with `| fields` pipes applied.
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

let dayStart = NaN;
let dayPrefix = '';

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/** new Date(ms).toISOString() without a Date per call: the date part is reused within a UTC day. */
export function isoTime(ms: number): string {
  const day = Math.floor(ms / 86_400_000) * 86_400_000;
  if (day !== dayStart || !Number.isFinite(ms)) {
    if (!Number.isFinite(ms) || ms < 0 || ms >= 253_402_300_800_000) return new Date(ms).toISOString();
    dayStart = day;
    dayPrefix = new Date(day).toISOString().slice(0, 11);
  }
  let r = ms - day;
  const h = Math.floor(r / 3_600_000);
  r -= h * 3_600_000;
  const m = Math.floor(r / 60_000);
  r -= m * 60_000;
  const sec = Math.floor(r / 1000);
  const milli = Math.floor(r - sec * 1000);
  return `${dayPrefix}${pad2(h)}:${pad2(m)}:${pad2(sec)}.${milli < 10 ? `00${milli}` : milli < 100 ? `0${milli}` : milli}Z`;
}

export function hitJson(id: string, time: number, data: string, pipes: readonly FieldsPipe[]): string {
  return `{"id":"${id}","data":${applyPipes(data, pipes)},"time":"${isoTime(time)}"}`;
}
