// TypeScript twin of native/doc-scan-time.cc: document times as src/logstore/doc-time.ts reads them (NaN: no time).
import { MIN_TIME_MS } from '../logstore/doc-time.js';

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function jsRound(x: number): number {
  const f = Math.floor(x);
  return x - f >= 0.5 ? f + 1 : f;
}

export function epochMs(x: number): number {
  if (!Number.isFinite(x) || x < 0) return NaN;
  const ms = x < 1e11 ? jsRound(x * 1000) : x < 1e14 ? jsRound(x) : x < 1e17 ? jsRound(x / 1000) : jsRound(x / 1e6);
  return ms < MIN_TIME_MS ? NaN : ms;
}

function digits(v: string, at: number, n: number): number {
  let x = 0;
  for (let i = at; i < at + n; i++) {
    const d = v.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) return -1;
    x = x * 10 + d;
  }
  return x;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Date.UTC(y, mo - 1, d) for a day that exists in that month (years 0..99 are 1900..1999), else NaN. */
function utcDay(y: number, mo: number, d: number): number {
  if (y >= 0 && y <= 99) y += 1900;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  if (d > DAYS[mo - 1]! + (mo === 2 && leap ? 1 : 0)) return NaN;
  return Date.UTC(y, mo - 1, d);
}

function fastIso(v: string): number {
  const y = digits(v, 0, 4);
  const mo = digits(v, 5, 2);
  const d = digits(v, 8, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || v.charCodeAt(7) !== 45) return NaN;
  const day = utcDay(y, mo, d);
  if (Number.isNaN(day)) return NaN;
  const h = digits(v, 11, 2);
  const mi = digits(v, 14, 2);
  const s = digits(v, 17, 2);
  const ms = digits(v, 20, 3);
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 || ms < 0 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58) return NaN;
  return day + ((h * 60 + mi) * 60 + s) * 1000 + ms;
}

const SHAPE = 'dddd-dd-ddTdd:dd:dd';

function rfc3339(v: string): number {
  const n = v.length;
  for (let i = 0; i < 19; i++) {
    const k = SHAPE[i]!;
    const c = v[i]!;
    if (k === 'd' ? !isDigit(c.charCodeAt(0)) : k === 'T' ? c !== 'T' && c !== 't' && c !== ' ' : c !== k) return NaN;
  }
  let pos = 19;
  let frac = '.000';
  let hasFrac = false;
  if (pos < n && v[pos] === '.') {
    let f = pos + 1;
    while (f < n && isDigit(v.charCodeAt(f))) f++;
    const count = f - pos - 1;
    if (count < 1 || count > 9) return NaN;
    frac = `.${v.slice(pos + 1, pos + 1 + Math.min(3, count))}`.padEnd(4, '0');
    hasFrac = true;
    pos = f;
  }
  let zoneMin = 0;
  if (pos < n) {
    const z = v[pos];
    if (z === 'Z' || z === 'z') pos++;
    else if (z === '+' || z === '-') {
      let q = pos + 1;
      if (q + 2 > n || !isDigit(v.charCodeAt(q)) || !isDigit(v.charCodeAt(q + 1))) return NaN;
      const hh = digits(v, q, 2);
      q += 2;
      if (q < n && v[q] === ':') q++;
      if (q + 2 > n || !isDigit(v.charCodeAt(q)) || !isDigit(v.charCodeAt(q + 1))) return NaN;
      const mm = digits(v, q, 2);
      zoneMin = (z === '-' ? -1 : 1) * (hh * 60 + mm);
      pos = q + 2;
    } else return NaN;
  }
  if (pos !== n) return NaN;
  const mo = digits(v, 5, 2);
  const d = digits(v, 8, 2);
  const h = digits(v, 11, 2);
  const mi = digits(v, 14, 2);
  const sec = digits(v, 17, 2);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return NaN;
  const day = utcDay(digits(v, 0, 4), mo, d);
  if (Number.isNaN(day)) return NaN;
  const fracMs = hasFrac ? Math.floor(Number(frac) * 1000) : 0;
  return day + ((h * 60 + mi) * 60 + sec) * 1000 + fracMs - zoneMin * 60000;
}

const EPOCH_TEXT = /^\d{1,20}(\.\d{1,9})?$/;

/** parseDocTime of a string (ASCII): an epoch text, RFC 3339 or "YYYY-MM-DD HH:MM:SS", else NaN. */
export function stringTime(v: string): number {
  const n = v.length;
  if (n < 19 && n > 0 && isDigit(v.charCodeAt(0)) && EPOCH_TEXT.test(v)) return epochMs(Number(v));
  if (n < 19 || n > 40) return NaN;
  if (n === 24 && v[10] === 'T' && v[23] === 'Z' && v[19] === '.' && v[4] === '-') {
    const t = fastIso(v);
    if (!Number.isNaN(t)) return t;
  }
  return rfc3339(v);
}

