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

/** Bytes of `YYYY-MM-DDTHH:MM:SS.mmmZ`; isoTime() of a time before year 0 or past 9999 is longer. */
export const ISO_TIME_BYTES = 24;

/** isoTime(ms) as ASCII bytes at out[at] (no string made); false, writing nothing, outside years 0-9999. */
export function writeIsoTime(ms: number, out: Uint8Array, at: number): boolean {
  if (!(ms >= 0 && ms < 253_402_300_800_000)) return false;
  const day = Math.floor(ms / 86_400_000) * 86_400_000;
  if (day !== dayStart) {
    dayStart = day;
    dayPrefix = new Date(day).toISOString().slice(0, 11);
  }
  for (let i = 0; i < 11; i++) out[at + i] = dayPrefix.charCodeAt(i);
  let r = ms - day;
  const h = Math.floor(r / 3_600_000);
  r -= h * 3_600_000;
  const m = Math.floor(r / 60_000);
  r -= m * 60_000;
  const sec = Math.floor(r / 1000);
  const milli = Math.floor(r - sec * 1000);
  let p = at + 11;
  out[p++] = 48 + ((h / 10) | 0);
  out[p++] = 48 + (h % 10);
  out[p++] = 58;
  out[p++] = 48 + ((m / 10) | 0);
  out[p++] = 48 + (m % 10);
  out[p++] = 58;
  out[p++] = 48 + ((sec / 10) | 0);
  out[p++] = 48 + (sec % 10);
  out[p++] = 46;
  out[p++] = 48 + ((milli / 100) | 0);
  out[p++] = 48 + (((milli / 10) | 0) % 10);
  out[p++] = 48 + (milli % 10);
  out[p] = 90;
  return true;
}

export function hitJson(id: string, time: number, data: string, pipes: readonly FieldsPipe[]): string {
  return `{"id":"${id}","data":${applyPipes(data, pipes)},"time":"${isoTime(time)}"}`;
}
