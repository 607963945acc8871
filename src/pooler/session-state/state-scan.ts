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
  [StateKind.Listen, 'LISTEN'],
  [StateKind.AdvisoryLock, 'advisory lock'],
  [StateKind.TempTable, 'temporary table'],
  [StateKind.HoldCursor, 'WITH HOLD cursor'],
  [StateKind.SqlPrepare, 'SQL PREPARE'],
  [StateKind.Load, 'LOAD'],
];

export function stateKindNames(flags: number): string {
  return STATE_KIND_NAMES.filter(([k]) => (flags & k) !== 0)
    .map(([, n]) => n)
    .join(', ');
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
  ['pg_advisory_lock', StateKind.AdvisoryLock],
  ['pg_advisory_lock_shared', StateKind.AdvisoryLock],
  ['pg_try_advisory_lock', StateKind.AdvisoryLock],
  ['pg_try_advisory_lock_shared', StateKind.AdvisoryLock],
  ['temp', StateKind.TempTable],
  ['temporary', StateKind.TempTable],
  ['pg_temp', StateKind.TempTable],
  ['hold', StateKind.HoldCursor],
  ['prepare', StateKind.SqlPrepare],
  ['load', StateKind.Load],
]);

/** Client message types whose body is scanned: Query ('Q') and Parse ('P'). */
const QUERY = 0x51;
const PARSE = 0x50;

/** Kinds DISCARD ALL drops (everything but a loaded library). */
const DISCARD_ALL =
  StateKind.Listen | StateKind.AdvisoryLock | StateKind.TempTable | StateKind.HoldCursor | StateKind.SqlPrepare;

/** A statement-opening word whose next token may make it a clean-up (UNLISTEN *, DISCARD ALL|TEMP, CLOSE ALL, DEALLOCATE ALL). */
const enum Pending {
  None = 0,
  Unlisten = 1,
  Discard = 2,
  Close = 3,
  Deallocate = 4,
}

const OPENERS = new Map<string, Pending>([
  ['unlisten', Pending.Unlisten],
  ['discard', Pending.Discard],
  ['close', Pending.Close],
  ['deallocate', Pending.Deallocate],
]);

/** Space, tab, newline, vertical tab, form feed, carriage return. */
const isSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/**
 * Follows a client's byte stream (its own framing: five-byte headers, cut anywhere by reads) and ORs into `flags`
 * the kind of every listed word (case-insensitive, whole SQL words) found in Query and Parse bodies. It sees words
 * in comments, string literals and quoted names too: a false hit pins a client it need not pin, never the reverse.
 * Words built at run time (EXECUTE in PL/pgSQL, a function that takes the lock) are not seen.
 *
 * `cleared` gets the kinds a clean-up statement drops: `UNLISTEN *`, `DISCARD ALL`, `DISCARD TEMP`, `CLOSE ALL`,
 * `DEALLOCATE ALL` when they open a statement (the text's start, or after `;`, with only whitespace between), and
 * `pg_advisory_unlock_all` anywhere. The relays take both sets at each transaction's end (`take`).
 */
export class StateScan {
  flags = 0;
  cleared = 0;
  private header = Buffer.alloc(5);
  private headerLen = 0;
  /** Body bytes left of the current message. */
  private left = 0;
  private text = false;
  private word = Buffer.alloc(MAX_WORD);
  /** Length of the word being read; MAX_WORD + 1 once it is longer than any listed word. */
  private wordLen = 0;
  /** Only whitespace since the text's start or its last `;` (or NUL: Parse's name ends there). */
  private atStatement = true;
  /** The word being read opened its statement. */
  private wordOpens = false;
  private pending: Pending = Pending.None;

  feed(buf: Buffer, start = 0, end = buf.length): void {
    let pos = start;
    while (pos < end) {
      if (this.left > 0) {
        const take = Math.min(this.left, end - pos);
        if (this.text) this.scanText(buf, pos, pos + take);
        pos += take;
        this.left -= take;
        if (this.left === 0 && this.text) {
          if (this.wordLen > 0) this.endWord();
          this.pending = Pending.None;
        }
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
      this.atStatement = true;
      this.pending = Pending.None;
    }
  }

  /** The kinds named and cleared since the last take: `flags | cleared << 8`. */
  take(): number {
    const both = this.flags | (this.cleared << 8);
    this.flags = 0;
    this.cleared = 0;
    return both;
  }

  private scanText(buf: Buffer, from: number, to: number): void {
    const word = this.word;
    let n = this.wordLen;
    for (let i = from; i < to; i++) {
      let c = buf[i]!;
      if (c >= 0x41 && c <= 0x5a) c |= 0x20;
      if (WORD[c] === 1) {
        if (n === 0) {
          this.wordOpens = this.atStatement;
          this.atStatement = false;
        }
        if (n < MAX_WORD) word[n] = c;
        if (n <= MAX_WORD) n++;
        continue;
      }
      if (n > 0) {
        this.wordLen = n;
        this.endWord();
        n = 0;
      }
      if (isSpace(c)) continue;
      if (this.pending === Pending.Unlisten && c === 0x2a) this.cleared |= StateKind.Listen; // *
      this.pending = Pending.None;
      this.atStatement = c === 0x3b || c === 0; // ; or NUL
    }
    this.wordLen = n;
  }

  private endWord(): void {
    const n = this.wordLen;
    this.wordLen = 0;
    const pending = this.pending;
    this.pending = Pending.None;
    if (
      pending !== Pending.None &&
      n === 3 &&
      this.word[0] === 0x61 &&
      this.word[1] === 0x6c &&
      this.word[2] === 0x6c
    ) {
      // all
      if (pending === Pending.Discard) this.cleared |= DISCARD_ALL;
      else if (pending === Pending.Close) this.cleared |= StateKind.HoldCursor;
      else if (pending === Pending.Deallocate) this.cleared |= StateKind.SqlPrepare;
      return;
    }
    if (n < 4 || n > 27) return;
    const f = this.word[0]!;
    if (f !== 0x6c && f !== 0x70 && f !== 0x74 && f !== 0x68 && f !== 0x75 && f !== 0x64 && f !== 0x63) return; // l, p, t, h, u, d, c
    const w = this.word.toString('latin1', 0, n);
    if (pending === Pending.Discard && (w === 'temp' || w === 'temporary')) {
      this.cleared |= StateKind.TempTable;
      return;
    }
    if (this.wordOpens) {
      const opener = OPENERS.get(w);
      if (opener !== undefined) {
        this.pending = opener;
        return;
      }
    }
    if (w === 'pg_advisory_unlock_all') {
      this.cleared |= StateKind.AdvisoryLock;
      return;
    }
    const kind = WORDS.get(w);
    if (kind !== undefined) this.flags |= kind;
  }
}
