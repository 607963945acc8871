// TypeScript twin of native/doc-scan.cc: one NDJSON document into its leaf values and its time, or null when the
// document takes the JavaScript path (JSON.parse and ActiveIndex's walk).
import { MAX_FUTURE_MS, MIN_TIME_MS } from '../logstore/doc-time.js';
import { epochMs, stringTime } from './doc-scan-time.js';

export const LEAF_STRING = 0;
export const LEAF_NUMBER = 1;
export const LEAF_TRUE = 2;
export const LEAF_FALSE = 3;

export interface Leaf {
  path: string;
  kind: number;
  /** A number's source text or a string's value (meaningless when !ascii). */
  value: string;
  ascii: boolean;
  /** A number whose text is what String(Number(text)) gives. */
  canon: boolean;
}

export interface ScannedDoc {
  leaves: Leaf[];
  /** Per time field (timestamp, time, ts, @timestamp): its leaf, -1 when absent, -2 when not a string or number. */
  timeLeaf: number[];
}

const MAX_DEPTH = 64;
const MAX_KEYS = 256;
const TIME_FIELDS = ['timestamp', 'time', 'ts', '@timestamp'];
const utf8 = new TextDecoder();

class Fallback extends Error {}
const FALLBACK = new Fallback();

class Scanner {
  p: number;
  path = '';
  readonly leaves: Leaf[] = [];
  readonly timeLeaf = [-1, -1, -1, -1];

  constructor(private readonly b: Uint8Array, start: number, private readonly end: number) {
    this.p = start;
  }

  run(): void {
    this.ws();
    if (this.p >= this.end || this.b[this.p] !== 0x7b) throw FALLBACK;
    this.object(1);
    this.ws();
    if (this.p !== this.end) throw FALLBACK;
  }

  ws(): void {
    const b = this.b;
    while (this.p < this.end) {
      const c = b[this.p]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.p++;
    }
  }

  /** A string at p (the opening quote): its value and whether it is ASCII (\u escapes above 0x7f are not decoded). */
  string(): { s: string; ascii: boolean } {
    const b = this.b;
    let s = '';
    let ascii = true;
    this.p++;
    for (;;) {
      const from = this.p;
      while (this.p < this.end) {
        const c = b[this.p]!;
        if (c === 0x22 || c === 0x5c || c < 0x20) break;
        if (c >= 0x80) ascii = false;
        this.p++;
      }
      if (this.p > from) s += utf8.decode(b.subarray(from, this.p));
      if (this.p >= this.end || b[this.p]! < 0x20) throw FALLBACK;
      if (b[this.p] === 0x22) {
        this.p++;
        return { s, ascii };
      }
      if (++this.p >= this.end) throw FALLBACK;
      const e = b[this.p++]!;
      switch (e) {
        case 0x22: s += '"'; break;
        case 0x5c: s += '\\'; break;
        case 0x2f: s += '/'; break;
        case 0x62: s += '\b'; break;
        case 0x66: s += '\f'; break;
        case 0x6e: s += '\n'; break;
        case 0x72: s += '\r'; break;
        case 0x74: s += '\t'; break;
        case 0x75: {
          if (this.end - this.p < 4) throw FALLBACK;
          let cp = 0;
          for (let i = 0; i < 4; i++) {
            const h = hex(b[this.p + i]!);
            if (h < 0) throw FALLBACK;
            cp = cp * 16 + h;
          }
          this.p += 4;
          if (cp < 0x80) s += String.fromCharCode(cp);
          else ascii = false;
          break;
        }
        default: throw FALLBACK;
      }
    }
  }

  number(): { text: string; canon: boolean } {
    const b = this.b;
    const s = this.p;
    let neg = false;
    if (b[this.p] === 0x2d) {
      neg = true;
      this.p++;
    }
    if (this.p >= this.end) throw FALLBACK;
    const intStart = this.p;
    if (b[this.p] === 0x30) this.p++;
    else if (isDigit(b[this.p]!)) while (this.p < this.end && isDigit(b[this.p]!)) this.p++;
    else throw FALLBACK;
    const intLen = this.p - intStart;
    let fracLen = 0;
    let fracZeros = 0;
    let fracEndsZero = false;
    let exp = false;
    if (this.p < this.end && b[this.p] === 0x2e) {
      this.p++;
      const f = this.p;
      while (this.p < this.end && isDigit(b[this.p]!)) this.p++;
      fracLen = this.p - f;
      if (fracLen === 0) throw FALLBACK;
      fracEndsZero = b[this.p - 1] === 0x30;
      while (fracZeros < fracLen && b[f + fracZeros] === 0x30) fracZeros++;
    }
    if (this.p < this.end && (b[this.p] === 0x65 || b[this.p] === 0x45)) {
      exp = true;
      this.p++;
      if (this.p < this.end && (b[this.p] === 0x2b || b[this.p] === 0x2d)) this.p++;
      const e = this.p;
      while (this.p < this.end && isDigit(b[this.p]!)) this.p++;
      if (this.p === e) throw FALLBACK;
    }
    const zeroInt = intLen === 1 && b[intStart] === 0x30;
    const sig = zeroInt ? fracLen - fracZeros : intLen + fracLen;
    const canon = !exp && !fracEndsZero && sig <= 15 && !(zeroInt && fracLen > 0 && fracZeros > 5) && !(neg && zeroInt && fracLen === 0);
    return { text: String.fromCharCode(...b.subarray(s, this.p)), canon };
  }

  literal(word: string): void {
    if (this.end - this.p < word.length) throw FALLBACK;
    for (let i = 0; i < word.length; i++) if (this.b[this.p + i] !== word.charCodeAt(i)) throw FALLBACK;
    this.p += word.length;
  }

  leaf(kind: number, value: string, ascii: boolean, canon: boolean): void {
    this.leaves.push({ path: this.path, kind, value, ascii, canon });
  }

  value(depth: number): void {
    if (this.p >= this.end) throw FALLBACK;
    const c = this.b[this.p]!;
    if (c === 0x7b) return this.object(depth + 1);
    if (c === 0x5b) return this.array(depth + 1);
    if (c === 0x22) {
      const { s, ascii } = this.string();
      return this.leaf(LEAF_STRING, s, ascii, false);
    }
    if (c === 0x2d || isDigit(c)) {
      const { text, canon } = this.number();
      return this.leaf(LEAF_NUMBER, text, true, canon);
    }
    if (c === 0x74) {
      this.literal('true');
      return this.leaf(LEAF_TRUE, 'true', true, false);
    }
    if (c === 0x66) {
      this.literal('false');
      return this.leaf(LEAF_FALSE, 'false', true, false);
    }
    if (c === 0x6e) return this.literal('null');
    throw FALLBACK;
  }

  array(depth: number): void {
    if (depth > MAX_DEPTH) throw FALLBACK;
    this.p++;
    this.ws();
    if (this.p < this.end && this.b[this.p] === 0x5d) {
      this.p++;
      return;
    }
    for (;;) {
      this.ws();
      this.value(depth);
      this.ws();
      if (this.p >= this.end) throw FALLBACK;
      const c = this.b[this.p++]!;
      if (c === 0x5d) return;
      if (c !== 0x2c) throw FALLBACK;
    }
  }

  object(depth: number): void {
    if (depth > MAX_DEPTH) throw FALLBACK;
    const b = this.b;
    this.p++;
    this.ws();
    if (this.p < this.end && b[this.p] === 0x7d) {
      this.p++;
      return;
    }
    const base = this.path;
    const keys: string[] = [];
    for (;;) {
      this.ws();
      if (this.p >= this.end || b[this.p] !== 0x22) throw FALLBACK;
      const raw = this.p;
      const { s: key, ascii } = this.string();
      if (!ascii) {
        for (let q = raw + 1; q < this.p - 1; q++) if (b[q] === 0x5c && b[q + 1] === 0x75) throw FALLBACK;
      }
      if (key.length > 0 && /^[0-9]+$/.test(key)) throw FALLBACK;
      if (depth === 1 && key === '_id') throw FALLBACK;
      if (keys.includes(key)) throw FALLBACK;
      if (keys.length >= MAX_KEYS) throw FALLBACK;
      keys.push(key);
      const timeField = depth === 1 ? TIME_FIELDS.indexOf(key) : -1;
      this.path = base ? `${base}.${key}` : key;
      this.ws();
      if (this.p >= this.end || b[this.p++] !== 0x3a) throw FALLBACK;
      this.ws();
      const before = this.leaves.length;
      const c = this.p < this.end ? b[this.p]! : 0;
      const scalar = this.p < this.end && c !== 0x7b && c !== 0x5b && c !== 0x6e && c !== 0x74 && c !== 0x66;
      this.value(depth);
      if (timeField >= 0) this.timeLeaf[timeField] = scalar ? before : -2;
      this.path = base;
      this.ws();
      if (this.p >= this.end) throw FALLBACK;
      const d = b[this.p++]!;
      if (d === 0x7d) return;
      if (d !== 0x2c) throw FALLBACK;
    }
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function hex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** Scans document bytes buf[start, end) (valid UTF-8); null when it takes the JavaScript path. */
export function scanDoc(buf: Uint8Array, start: number, end: number): ScannedDoc | null {
  const s = new Scanner(buf, start, end);
  try {
    s.run();
  } catch (err) {
    if (err === FALLBACK) return null;
    throw err;
  }
  return { leaves: s.leaves, timeLeaf: s.timeLeaf };
}

/** The document's time (docTime of doc-time.ts); NaN when it must be clamped (the JavaScript path keeps the
 *  original value), `now` when no time field holds a time. */
export function scannedDocTime(doc: ScannedDoc, now: number): number {
  for (let f = 0; f < 4; f++) {
    const li = doc.timeLeaf[f]!;
    if (li < 0) continue;
    const l = doc.leaves[li]!;
    let t = NaN;
    if (l.kind === LEAF_NUMBER) t = epochMs(Number(l.value));
    else if (l.kind === LEAF_STRING && l.ascii) t = stringTime(l.value);
    if (Number.isNaN(t)) continue;
    if (t > now + MAX_FUTURE_MS || t < MIN_TIME_MS) return NaN;
    return t;
  }
  return now;
}
