// The fingerprint of a simple-protocol Query text: literals replaced by ?, comments dropped, whitespace collapsed, and FNV-1a 64 over the result, in one pass that reads may cut anywhere; the native relay's twin is native/query-fingerprint.h.

/** Bytes of normalized text kept (the hash covers all of it). */
export const QUERY_TEXT_MAX = 2048;
const TAG_MAX = 64;

const enum Mode {
  Normal,
  Word,
  Number,
  Squote,
  SquoteEnd,
  Estring,
  EstringEsc,
  EstringEnd,
  Dquote,
  DollarStart,
  DollarTag,
  DollarBody,
  LineComment,
  BlockComment,
  Done,
}

/** Byte classes: 1 letter, 2 digit, 4 word start (letter, _, multibyte), 8 word byte (and $), 16 tag byte, 32 space. */
const CLASS = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const letter = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
  const digit = c >= 0x30 && c <= 0x39;
  const start = letter || c === 0x5f || c >= 0x80;
  CLASS[c] =
    (letter ? 1 : 0) |
    (digit ? 2 : 0) |
    (start ? 4 : 0) |
    (start || digit || c === 0x24 ? 8 : 0) |
    (start || digit ? 16 : 0) |
    (c === 0x20 || (c >= 0x09 && c <= 0x0d) ? 32 : 0);
}
const LETTER = 1,
  DIGIT = 2,
  WORD_START = 4,
  WORD_BYTE = 8,
  TAG_BYTE = 16,
  SPACE = 32;

function isPrefix(c: number): boolean {
  const l = c | 0x20;
  return l === 0x65 || l === 0x62 || l === 0x78 || l === 0x6e; // e b x n
}

/**
 * Normalizes a query text fed in pieces (see native/query-fingerprint.h for the rules, which docs/pooler.md "Top queries" states).
 * One per client: its fields are reused from one Query to the next, so a Query costs no allocation.
 */
export class QueryFingerprint {
  /** FNV-1a 64 in two 32-bit halves. */
  hi = 0xcbf29ce4;
  lo = 0x84222325;
  emitted = 0;
  readonly text = Buffer.allocUnsafe(QUERY_TEXT_MAX);
  textLen = 0;
  private mode = Mode.Normal;
  private held = 0;
  private space = false;
  private numHex = false;
  private numFirst = 0;
  private numPrev = 0;
  private numLen = 0;
  private readonly tag = new Uint8Array(TAG_MAX);
  private tagLen = 0;
  private match = 0;
  private cprev = 0;
  private depth = 0;

  start(): void {
    this.hi = 0xcbf29ce4;
    this.lo = 0x84222325;
    this.emitted = 0;
    this.textLen = 0;
    this.mode = Mode.Normal;
    this.held = 0;
    this.space = false;
  }

  /** 16 hex digits of the hash. */
  get hash(): string {
    return this.hi.toString(16).padStart(8, '0') + this.lo.toString(16).padStart(8, '0');
  }

  private put(b: number): void {
    // (hi, lo) ^= b, then times 0x100000001b3 = 2^40 + 0x1b3, modulo 2^64.
    const lo = (this.lo ^ b) >>> 0;
    const a = lo * 0x1b3;
    const newLo = a >>> 0;
    this.hi = (this.hi * 0x1b3 + (a - newLo) / 4294967296 + ((lo << 8) >>> 0)) >>> 0;
    this.lo = newLo;
    this.emitted++;
    if (this.textLen < QUERY_TEXT_MAX) this.text[this.textLen++] = b;
  }

  private emit(b: number): void {
    if (this.space) {
      this.space = false;
      if (this.emitted > 0) this.put(0x20);
    }
    this.put(b);
  }

  private emitTag(): void {
    for (let i = 0; i < this.tagLen; i++) this.emit(this.tag[i]!);
  }

  /** A held byte meets the next: true when that byte is consumed. */
  private resolve(c: number): boolean {
    const h = this.held;
    this.held = 0;
    if (h === 0x2d) {
      // -
      if (c === 0x2d) {
        this.mode = Mode.LineComment;
        return true;
      }
      this.emit(0x2d);
      return false;
    }
    if (h === 0x2f) {
      // /
      if (c === 0x2a) {
        this.mode = Mode.BlockComment;
        this.depth = 1;
        this.cprev = 0;
        return true;
      }
      this.emit(0x2f);
      return false;
    }
    if (h === 0x2e) {
      // .
      if (CLASS[c]! & DIGIT) {
        this.emit(0x3f);
        this.mode = Mode.Number;
        this.numHex = false;
        this.numFirst = 0x2e;
        this.numPrev = c;
        this.numLen = 2;
        return true;
      }
      this.emit(0x2e);
      return false;
    }
    if (c === 0x27) {
      this.emit(0x3f);
      this.mode = (h | 0x20) === 0x65 ? Mode.Estring : Mode.Squote;
      return true;
    }
    this.emit(h);
    this.mode = Mode.Word;
    return false;
  }

  private byte(c: number): void {
    if (c === 0) {
      this.end();
      return;
    }
    for (;;) {
      switch (this.mode) {
        case Mode.Normal: {
          if (this.held !== 0) {
            if (this.resolve(c)) return;
            continue;
          }
          const k = CLASS[c]!;
          if (k & SPACE) {
            this.space = true;
          } else if (c === 0x2d || c === 0x2f || c === 0x2e) {
            this.held = c;
          } else if (c === 0x27) {
            this.emit(0x3f);
            this.mode = Mode.Squote;
          } else if (c === 0x22) {
            this.emit(0x22);
            this.mode = Mode.Dquote;
          } else if (c === 0x24) {
            this.mode = Mode.DollarStart;
          } else if (k & DIGIT) {
            this.emit(0x3f);
            this.mode = Mode.Number;
            this.numHex = false;
            this.numFirst = c;
            this.numPrev = c;
            this.numLen = 1;
          } else if (k & WORD_START) {
            if (isPrefix(c)) {
              this.held = c;
            } else {
              this.emit(c);
              this.mode = Mode.Word;
            }
          } else {
            this.emit(c);
          }
          return;
        }
        case Mode.Word:
          if (CLASS[c]! & WORD_BYTE) {
            this.emit(c);
            return;
          }
          this.mode = Mode.Normal;
          continue;
        case Mode.Number: {
          if (this.numLen === 1 && this.numFirst === 0x30 && (c === 0x78 || c === 0x58)) this.numHex = true;
          let more = (CLASS[c]! & (DIGIT | LETTER)) !== 0 || c === 0x5f || c === 0x2e;
          if (!more && (c === 0x2b || c === 0x2d) && (this.numPrev === 0x65 || this.numPrev === 0x45) && !this.numHex)
            more = true;
          if (more) {
            this.numPrev = c;
            this.numLen++;
            return;
          }
          this.mode = Mode.Normal;
          continue;
        }
        case Mode.Squote:
          if (c === 0x27) this.mode = Mode.SquoteEnd;
          return;
        case Mode.SquoteEnd:
          if (c === 0x27) {
            this.mode = Mode.Squote;
            return;
          }
          this.mode = Mode.Normal;
          continue;
        case Mode.Estring:
          if (c === 0x5c) this.mode = Mode.EstringEsc;
          else if (c === 0x27) this.mode = Mode.EstringEnd;
          return;
        case Mode.EstringEsc:
          this.mode = Mode.Estring;
          return;
        case Mode.EstringEnd:
          if (c === 0x27) {
            this.mode = Mode.Estring;
            return;
          }
          this.mode = Mode.Normal;
          continue;
        case Mode.Dquote:
          this.emit(c);
          if (c === 0x22) this.mode = Mode.Normal;
          return;
        case Mode.DollarStart:
          if (CLASS[c]! & DIGIT) {
            this.emit(0x24);
            this.emit(c);
            this.mode = Mode.Word;
            return;
          }
          if (c === 0x24) {
            this.emit(0x3f);
            this.tagLen = 0;
            this.match = 0;
            this.mode = Mode.DollarBody;
            return;
          }
          if (CLASS[c]! & WORD_START) {
            this.tag[0] = c;
            this.tagLen = 1;
            this.mode = Mode.DollarTag;
            return;
          }
          this.emit(0x24);
          this.mode = Mode.Normal;
          continue;
        case Mode.DollarTag:
          if (CLASS[c]! & TAG_BYTE && this.tagLen < TAG_MAX) {
            this.tag[this.tagLen++] = c;
            return;
          }
          if (c === 0x24) {
            this.emit(0x3f);
            this.match = 0;
            this.mode = Mode.DollarBody;
            return;
          }
          // Not a dollar quote ($name without its closing $, or a tag past TAG_MAX): a word, as it was written.
          this.emit(0x24);
          this.emitTag();
          this.mode = Mode.Word;
          continue;
        case Mode.DollarBody: {
          const m = this.match;
          const want = m === 0 || m === this.tagLen + 1 ? 0x24 : this.tag[m - 1]!;
          if (c === want) {
            if (++this.match === this.tagLen + 2) this.mode = Mode.Normal;
          } else {
            this.match = c === 0x24 ? 1 : 0;
          }
          return;
        }
        case Mode.LineComment:
          if (c === 0x0a || c === 0x0d) {
            this.mode = Mode.Normal;
            this.space = true;
          }
          return;
        case Mode.BlockComment:
          if (this.cprev === 0x2a && c === 0x2f) {
            this.cprev = 0;
            if (--this.depth === 0) {
              this.mode = Mode.Normal;
              this.space = true;
            }
          } else if (this.cprev === 0x2f && c === 0x2a) {
            this.cprev = 0;
            this.depth++;
          } else {
            this.cprev = c;
          }
          return;
        case Mode.Done:
          return;
      }
    }
  }

  feed(buf: Uint8Array, from: number, to: number): void {
    for (let i = from; i < to && this.mode !== Mode.Done; i++) this.byte(buf[i]!);
  }

  /** The text ended (its NUL, or the message's end): what was held is written as it is. */
  private end(): void {
    if (this.held !== 0) {
      this.emit(this.held);
      this.held = 0;
    }
    if (this.mode === Mode.DollarStart) this.emit(0x24);
    if (this.mode === Mode.DollarTag) {
      this.emit(0x24);
      this.emitTag();
    }
    this.mode = Mode.Done;
  }

  finish(): void {
    if (this.mode !== Mode.Done) this.end();
    if (this.emitted > this.textLen) {
      // Cut at QUERY_TEXT_MAX: no partial UTF-8 character at the end.
      const t = this.text;
      let k = this.textLen;
      let cont = 0;
      while (k > 0 && cont < 3 && (t[k - 1]! & 0xc0) === 0x80) {
        k--;
        cont++;
      }
      if (k > 0) {
        const lead = t[k - 1]!;
        const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (need > 1 && need > cont + 1) this.textLen = k - 1;
      }
    }
  }

  /** The normalized text kept (at most QUERY_TEXT_MAX bytes) as a string. */
  textString(): string {
    return this.text.toString('utf8', 0, this.textLen);
  }
}

/** One text fed in pieces: [hash, normalized text], as queryFingerprint of the addon answers. */
export function fingerprintOf(pieces: Uint8Array[]): [string, string] {
  const q = new QueryFingerprint();
  q.start();
  for (const p of pieces) q.feed(p, 0, p.length);
  q.finish();
  return [q.hash, q.textString()];
}
