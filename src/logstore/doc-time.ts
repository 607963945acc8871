// Document time (from timestamp, time, ts or @timestamp) and document ids that sort by that time.

export const TIME_FIELDS = ['timestamp', 'time', 'ts', '@timestamp'] as const;

/** Times later than now + this are clamped to ingest time (the original value is kept). */
export const MAX_FUTURE_MS = 24 * 3_600_000;
/** Times before 1971 are clamped to ingest time: they are almost always zero values. */
export const MIN_TIME_MS = Date.UTC(1971, 0, 1);

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:?\d{2})?$/;

let lastDay = '';
let lastDayMs = 0;

function digits(v: string, at: number, n: number): number {
  let x = 0;
  for (let i = at; i < at + n; i++) {
    const d = v.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    x = x * 10 + d;
  }
  return x;
}

/** "YYYY-MM-DDTHH:MM:SS.mmmZ" without Date.parse: the day is reused while it repeats (logs are in order). */
function fastIso(v: string): number | null {
  let day = lastDayMs;
  if (!v.startsWith(lastDay) || lastDay === '') {
    const y = digits(v, 0, 4);
    const mo = digits(v, 5, 2);
    const d = digits(v, 8, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || v.charCodeAt(7) !== 45) return null;
    day = Date.UTC(y, mo - 1, d);
    if (new Date(day).getUTCDate() !== d) return null;
    lastDay = v.slice(0, 11);
    lastDayMs = day;
  }
  const h = digits(v, 11, 2);
  const mi = digits(v, 14, 2);
  const s = digits(v, 17, 2);
  const ms = digits(v, 20, 3);
  if (
    h < 0 ||
    h > 23 ||
    mi < 0 ||
    mi > 59 ||
    s < 0 ||
    s > 59 ||
    ms < 0 ||
    v.charCodeAt(13) !== 58 ||
    v.charCodeAt(16) !== 58
  )
    return null;
  return day + ((h * 60 + mi) * 60 + s) * 1000 + ms;
}

const EPOCH_TEXT = /^\d{1,20}(\.\d{1,9})?$/;

/**
 * Milliseconds from an epoch number, by its size: below 1e11 seconds (1e11 s is the year 5138, 1e11 ms is
 * March 1973), below 1e14 milliseconds, below 1e17 microseconds, else nanoseconds. Elasticsearch's default
 * date format reads numbers as milliseconds only; shippers also send seconds (Fluent Bit, rsyslog's
 * `$now-unixtimestamp`, Python's time.time()) and Go sends nanoseconds. A value before 1971 is no time.
 */
export function epochMs(x: number): number | null {
  if (!Number.isFinite(x) || x < 0) return null;
  const ms =
    x < 1e11 ? Math.round(x * 1000) : x < 1e14 ? Math.round(x) : x < 1e17 ? Math.round(x / 1000) : Math.round(x / 1e6);
  // A small number in a time field is a duration or a counter ("time": 0.25), not a date: not read as one.
  return ms < MIN_TIME_MS ? null : ms;
}

/** Milliseconds since the epoch from RFC 3339, "YYYY-MM-DD HH:MM:SS.fff" (UTC when no zone) or an epoch
 *  number (a JSON number or a string of digits: seconds, milliseconds, micro- or nanoseconds), else null. */
export function parseDocTime(v: unknown): number | null {
  if (typeof v === 'number') return epochMs(v);
  if (typeof v !== 'string') return null;
  if (v.length < 19 && v.length > 0 && v.charCodeAt(0) >= 48 && v.charCodeAt(0) <= 57 && EPOCH_TEXT.test(v))
    return epochMs(Number(v));
  if (v.length < 19 || v.length > 40) return null;
  // Fast path for the common "2006-01-02T15:04:05.000Z" shape.
  if (
    v.length === 24 &&
    v.charCodeAt(10) === 84 &&
    v.charCodeAt(23) === 90 &&
    v.charCodeAt(19) === 46 &&
    v.charCodeAt(4) === 45
  ) {
    const t = fastIso(v);
    if (t !== null) return t;
  }
  const m = RFC3339.exec(v);
  if (!m) return null;
  const [mo, d, h, mi, sec] = [Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])];
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return null;
  if (new Date(Date.UTC(Number(m[1]), mo - 1, d)).getUTCDate() !== d) return null;
  const frac = m[7] ? Number(m[7].slice(0, 4).padEnd(4, '0')) : 0;
  let ms =
    Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) +
    Math.floor(frac * 1000);
  const zone = m[8];
  if (zone && zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
  }
  return Number.isFinite(ms) ? ms : null;
}

/** The document's time and whether the original value was replaced by ingest time. */
export function docTime(doc: Record<string, unknown>, now: number): { time: number; clampedFrom?: unknown } {
  for (const f of TIME_FIELDS) {
    const v = doc[f];
    if (v === undefined) continue;
    const t = parseDocTime(v);
    if (t === null) continue;
    if (t > now + MAX_FUTURE_MS || t < MIN_TIME_MS) return { time: now, clampedFrom: v };
    return { time: t };
  }
  return { time: now };
}

/** Ids are 24 hex digits: 12 of the document time in ms, 2 of the shard, 10 of a per-shard counter. */
export const ID_LENGTH = 24;

/** The id of a document from its time, shard (2 hex digits) and counter. */
export function formatId(time: number, shardHex: string, counter: number): string {
  return time.toString(16).padStart(12, '0') + shardHex + counter.toString(16).padStart(10, '0');
}

/**
 * A stored counter at or above OWN_SHARD carries its own shard byte: OWN_SHARD + shard * 2^40 + counter. A
 * proxy makes such ids (the same on every replica of a shard, whatever the store's own shard number is).
 */
export const OWN_SHARD = 2 ** 48;

/** The last 12 hex digits of an id (shard and counter) as a number, from a stored counter and the fraction's shard. */
export function idTail(counter: number, shard: number): number {
  return counter >= OWN_SHARD ? counter - OWN_SHARD : shard * 2 ** 40 + counter;
}

/** The id of a stored document: time, then its tail (see idTail) as 12 hex digits. */
export function formatIdTail(time: number, tail: number): string {
  return time.toString(16).padStart(12, '0') + tail.toString(16).padStart(12, '0');
}

/** As formatIdTail, writing the id as 24 ASCII bytes at out[pos] instead of making a string. */
export function formatIdTailInto(time: number, tail: number, out: Uint8Array, pos: number): void {
  hexInto(time, out, pos, 12);
  hexInto(tail, out, pos + 12, 12);
}

/** The counter part of an id. */
export function idCounter(id: string): number {
  return parseInt(id.slice(14), 16);
}

export class IdMaker {
  private counter: number;
  readonly shardHex: string;

  constructor(shard: number, seed = Math.floor(Math.random() * 2 ** 36)) {
    this.shardHex = (shard & 0xff).toString(16).padStart(2, '0');
    this.counter = seed;
  }

  /** Continues after `id` (after a replay), so the ids of one fraction stay consecutive. */
  continueAfter(id: string): void {
    const c = parseInt(id.slice(14), 16);
    if (Number.isFinite(c)) this.counter = c;
  }

  private lastTime = -1;
  private lastPrefix = '';

  /** The counter of the id next() returned last. */
  get current(): number {
    return this.counter;
  }

  next(time: number): string {
    this.counter = (this.counter + 1) % 2 ** 40;
    if (time !== this.lastTime) {
      this.lastTime = time;
      this.lastPrefix = time.toString(16).padStart(12, '0') + this.shardHex;
    }
    return this.lastPrefix + this.counter.toString(16).padStart(10, '0');
  }

  /** The counter whose hex digits `digits` holds (-1: none yet). */
  private digitsOf = -1;
  private readonly digits = new Uint8Array(10);
  private bytesTime = -1;
  private readonly prefix = new Uint8Array(14);

  /** As next(), writing the id as 24 ASCII bytes at out[pos] instead of making a string. */
  nextInto(time: number, out: Uint8Array, pos: number): void {
    const prev = this.counter;
    this.counter = (prev + 1) % 2 ** 40;
    const d = this.digits;
    if (this.digitsOf === prev) {
      // Consecutive counters: add one to the hex digits in place ("ff" wraps to "00" as the counter does).
      for (let i = 9; i >= 0; i--) {
        const c = d[i]!;
        if (c === 0x66) {
          d[i] = 0x30;
          continue;
        }
        d[i] = c === 0x39 ? 0x61 : c + 1;
        break;
      }
    } else hexInto(this.counter, d, 0, 10);
    this.digitsOf = this.counter;
    const p = this.prefix;
    if (time !== this.bytesTime) {
      this.bytesTime = time;
      hexInto(time, p, 0, 12);
      p[12] = this.shardHex.charCodeAt(0);
      p[13] = this.shardHex.charCodeAt(1);
    }
    for (let i = 0; i < 14; i++) out[pos + i] = p[i]!;
    for (let i = 0; i < 10; i++) out[pos + 14 + i] = d[i]!;
  }
}

const HEX = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

/** Writes the low `n` hex digits of a non-negative integer below 2^52 at out[pos]. */
function hexInto(v: number, out: Uint8Array, pos: number, n: number): void {
  let lo = v % 2 ** 24;
  let hi = Math.floor(v / 2 ** 24);
  for (let i = n - 1; i >= 0; i--) {
    if (i >= n - 6) {
      out[pos + i] = HEX[lo & 15]!;
      lo >>>= 4;
    } else {
      out[pos + i] = HEX[hi % 16]!;
      hi = Math.floor(hi / 16);
    }
  }
}

/** The time encoded in an id, or null when it is not one of ours. */
export function idTime(id: string): number | null {
  if (id.length !== ID_LENGTH || !/^[0-9a-f]+$/.test(id)) return null;
  return parseInt(id.slice(0, 12), 16);
}
