// Finds, in a client's Query and Parse texts, the words of session state that cannot move to another server (LISTEN, session advisory locks, temporary tables, WITH HOLD cursors, SQL PREPARE, LOAD); the native relay's twin is native/relay-state-scan.h.

/** Kinds of session state a client's text may create (bits of StateScan.flags). */
export const enum StateKind {
  Listen = 1,
  AdvisoryLock = 2,
  TempTable = 4,
  HoldCursor = 8,
  SqlPrepare = 16,
  Load = 32,
}

/** Every kind, in bit order, with the name SHOW and the events use. */
export const STATE_KIND_NAMES: readonly [StateKind, string][] = [
  [StateKind.Listen, 'LISTEN'], [StateKind.AdvisoryLock, 'advisory lock'], [StateKind.TempTable, 'temporary table'],
  [StateKind.HoldCursor, 'WITH HOLD cursor'], [StateKind.SqlPrepare, 'SQL PREPARE'], [StateKind.Load, 'LOAD'],
];

export function stateKindNames(flags: number): string {
  return STATE_KIND_NAMES.filter(([k]) => (flags & k) !== 0).map(([, n]) => n).join(', ');
}

/** Longest word looked at: pg_try_advisory_lock_shared has 27 letters. */
const MAX_WORD = 32;

/** Bytes that continue an SQL word once folded to lower case: a-z, 0-9, _, $ and every byte of a multibyte character. */
const WORD = new Uint8Array(256);
for (let c = 0x61; c <= 0x7a; c++) WORD[c] = 1;
for (let c = 0x30; c <= 0x39; c++) WORD[c] = 1;
WORD[0x5f] = 1;
WORD[0x24] = 1;
for (let c = 0x80; c <= 0xff; c++) WORD[c] = 1;

const WORDS = new Map<string, StateKind>([
  ['listen', StateKind.Listen],
  ['pg_advisory_lock', StateKind.AdvisoryLock], ['pg_advisory_lock_shared', StateKind.AdvisoryLock],
  ['pg_try_advisory_lock', StateKind.AdvisoryLock], ['pg_try_advisory_lock_shared', StateKind.AdvisoryLock],
  ['temp', StateKind.TempTable], ['temporary', StateKind.TempTable], ['pg_temp', StateKind.TempTable],
  ['hold', StateKind.HoldCursor],
  ['prepare', StateKind.SqlPrepare],
  ['load', StateKind.Load],
]);

/** Client message types whose body is scanned: Query ('Q') and Parse ('P'). */
const QUERY = 0x51;
const PARSE = 0x50;

/**
 * Follows a client's byte stream (its own framing: five-byte headers, cut anywhere by reads) and ORs into `flags`
 * the kind of every listed word (case-insensitive, whole SQL words) found in Query and Parse bodies. It sees words
 * in comments, string literals and quoted names too: a false hit pins a client it need not pin, never the reverse.
 * Words built at run time (EXECUTE in PL/pgSQL, a function that takes the lock) are not seen.
 */
export class StateScan {
  flags = 0;
  private header = Buffer.alloc(5);
  private headerLen = 0;
  /** Body bytes left of the current message. */
  private left = 0;
  private text = false;
  private word = Buffer.alloc(MAX_WORD);
  /** Length of the word being read; MAX_WORD + 1 once it is longer than any listed word. */
  private wordLen = 0;

  feed(buf: Buffer, start = 0, end = buf.length): void {
    let pos = start;
    while (pos < end) {
      if (this.left > 0) {
        const take = Math.min(this.left, end - pos);
        if (this.text) this.scanText(buf, pos, pos + take);
        pos += take;
        this.left -= take;
        if (this.left === 0 && this.text) this.endWord();
        continue;
      }
      this.header[this.headerLen++] = buf[pos++]!;
      if (this.headerLen < 5) continue;
      this.headerLen = 0;
      const type = this.header[0]!;
      const len = this.header.readUInt32BE(1);
      this.left = len > 4 ? len - 4 : 0;
      this.text = this.left > 0 && (type === QUERY || type === PARSE);
      this.wordLen = 0;
    }
  }

  private scanText(buf: Buffer, from: number, to: number): void {
    const word = this.word;
    let n = this.wordLen;
    for (let i = from; i < to; i++) {
      let c = buf[i]!;
      if (c >= 0x41 && c <= 0x5a) c |= 0x20;
      if (WORD[c] === 1) {
        if (n < MAX_WORD) word[n] = c;
        if (n <= MAX_WORD) n++;
      } else if (n > 0) {
        this.wordLen = n;
        this.endWord();
        n = 0;
      }
    }
    this.wordLen = n;
  }

  private endWord(): void {
    const n = this.wordLen;
    this.wordLen = 0;
    if (n < 4 || n > 27) return;
    const f = this.word[0]!;
    if (f !== 0x6c && f !== 0x70 && f !== 0x74 && f !== 0x68) return; // l, p, t, h
    const kind = WORDS.get(this.word.toString('latin1', 0, n));
    if (kind !== undefined) this.flags |= kind;
  }
}
