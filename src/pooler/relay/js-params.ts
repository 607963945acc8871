// The JavaScript relay's watch on session parameters: Query and Parse texts that may change one (param-scan.ts),
// noted on the server they go to, or held until the client is linked to one.
import { paramStatement, paramWords } from '../session-state/param-scan.js';

/** Where a noted text goes: the linked server's read-back (js-server.ts). `null`: a change whose text was not kept. */
export interface ParamTarget {
  noteParams(text: string | null): void;
}

export class ClientParamNotes {
  /** Noted while no server was linked. */
  private pending: (string | null)[] = [];
  private readonly text = { value: '' };
  /** Bytes still to come of a Query or Parse cut by a read with nothing found yet. */
  private readonly tail = { left: 0 };

  /** `server`: the linked server now, or null. */
  constructor(private readonly server: () => ParamTarget | null) {}

  /** A Query or Parse (or the part of it this read holds). */
  onMessage(type: number, buf: Buffer, start: number, len: number, complete: boolean): void {
    const kind = paramStatement(type, buf, start, len, complete, this.text, this.tail);
    if (kind !== 0) this.note(kind === 1 ? this.text.value : null);
  }

  /** Every client read, before it is framed: the start of one that continues a Query or Parse cut by the last. */
  onChunk(chunk: Buffer): void {
    if (this.tail.left === 0) return;
    const n = Math.min(this.tail.left, chunk.length);
    this.tail.left -= n;
    if (paramWords(chunk, 0, n, false)) {
      this.tail.left = 0;
      this.note(null);
    }
  }

  /** A server was linked: what was noted meanwhile goes to it. */
  linked(server: ParamTarget): void {
    if (!this.pending.length) return;
    for (const t of this.pending) server.noteParams(t);
    this.pending = [];
  }

  private note(text: string | null): void {
    const s = this.server();
    if (s) s.noteParams(text);
    else this.pending.push(text);
  }
}
