// Streaming NDJSON bulk parser (main thread): splits action/document pairs into batches of raw document
// bytes for the shards; only action lines are parsed here, documents are parsed and tokenized in workers.

export type BulkOp = 'index' | 'create';

export class BulkFormatError extends Error {
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'BulkFormatError';
  }
}

export interface ItemError {
  status: number;
  type: string;
  reason: string;
}

/** One document's place in the response (its id comes back from the shard with its batch). */
export interface BulkItems {
  ops: BulkOp[];
  indexes: string[];
  errors: Map<number, ItemError>;
}

export interface Batch {
  buf: Uint8Array;
  /** (start, length) of each document in buf. */
  offs: Int32Array;
  /** Item number of each document. */
  items: number[];
}

export interface BulkParserOptions {
  maxDocSize: number;
  defaultIndex: string;
  batchBytes: number;
  onBatch(batch: Batch): void;
}

const MAX_ACTION_LINE = 64 * 1024;
const PLAIN_INDEX = Buffer.from('{"index":{}}');
/** Bytes between two documents of one chunk (their action line) copied along rather than cutting the copy. */
const MAX_RUN_GAP = 256;

function isPlainIndex(buf: Buffer, start: number, end: number): boolean {
  if (end - start !== PLAIN_INDEX.length) return false;
  for (let i = 0; i < PLAIN_INDEX.length; i++) if (buf[start + i] !== PLAIN_INDEX[i]) return false;
  return true;
}

export class BulkParser {
  readonly items: BulkItems = { ops: [], indexes: [], errors: new Map() };
  private parts: Buffer[] = [];
  private partLen = 0;
  private oversize = false;
  private lineNo = 0;
  private expectDoc = false;
  /** The document line after an action that failed is skipped, and its item already carries the error. */
  private skipDoc = false;
  private sawAction = false;
  private batch: { buf: Buffer; used: number; offs: number[]; items: number[] } | null = null;
  /**
   * Documents of one chunk are copied into the batch together, with the action lines between them, in
   * one copy: source bytes [runStart, runEnd) of runSrc go to batch bytes from runDst (= batch.used).
   */
  private runSrc: Buffer | null = null;
  private runStart = 0;
  private runEnd = 0;

  constructor(private readonly opts: BulkParserOptions) {}

  get documents(): number {
    return this.items.ops.length;
  }

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) {
        this.closeRun();
        this.partial(chunk.subarray(start));
        return;
      }
      if (this.partLen === 0 && !this.oversize) this.line(chunk, start, nl);
      else {
        this.partial(chunk.subarray(start, nl));
        const whole = this.oversize ? null : this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partLen);
        const over = this.oversize;
        const size = this.partLen;
        this.parts = [];
        this.partLen = 0;
        this.oversize = false;
        if (over) this.oversizeLine(size);
        else this.line(whole!, 0, whole!.length);
      }
      start = nl + 1;
    }
  }

  /** Ends the body: the last line may lack its newline; flushes the open batch. */
  end(): void {
    if (this.oversize) this.oversizeLine(this.partLen);
    else if (this.partLen > 0) {
      const whole = Buffer.concat(this.parts, this.partLen);
      this.line(whole, 0, whole.length);
    }
    this.parts = [];
    this.partLen = 0;
    this.oversize = false;
    if (this.expectDoc && !this.skipDoc) this.fail(this.items.ops.length - 1, 400, 'action_request_validation_exception', `line ${this.lineNo}: an action line without its document line`);
    if (!this.sawAction) throw new BulkFormatError(0, 'the request body is empty; expected NDJSON action and document lines');
    this.flush();
  }

  private partial(piece: Buffer): void {
    if (piece.length === 0) return;
    const limit = this.expectDoc ? this.opts.maxDocSize : MAX_ACTION_LINE;
    if (this.oversize || this.partLen + piece.length > limit) {
      this.oversize = true;
      this.parts = [];
      this.partLen += piece.length;
      return;
    }
    this.parts.push(Buffer.from(piece));
    this.partLen += piece.length;
  }

  private oversizeLine(size: number): void {
    this.lineNo++;
    if (!this.expectDoc) {
      if (!this.sawAction) throw new BulkFormatError(this.lineNo, `the first line is ${size} bytes long; expected an action line such as {"index":{}}`);
      this.fail(this.newItem('index', this.opts.defaultIndex), 400, 'illegal_argument_exception', `line ${this.lineNo}: action line longer than ${MAX_ACTION_LINE} bytes`);
      this.expectDoc = true;
      this.skipDoc = true;
      return;
    }
    this.expectDoc = false;
    if (this.skipDoc) { this.skipDoc = false; return; }
    const item = this.items.ops.length - 1;
    this.fail(item, 400, 'document_too_large_exception', `line ${this.lineNo}: the document is ${size} bytes, more than limits.max_doc_size (${this.opts.maxDocSize})`);
  }

  private newItem(op: BulkOp, index: string): number {
    this.items.ops.push(op);
    this.items.indexes.push(index);
    return this.items.ops.length - 1;
  }

  private fail(item: number, status: number, type: string, reason: string): void {
    this.items.errors.set(item, { status, type, reason });
  }

  private line(raw: Buffer, from: number, to: number): void {
    this.lineNo++;
    let end = to;
    while (end > from && (raw[end - 1] === 13 || raw[end - 1] === 32 || raw[end - 1] === 9)) end--;
    let start = from;
    while (start < end && (raw[start] === 32 || raw[start] === 9)) start++;
    if (start === end) return;
    if (this.expectDoc) {
      this.expectDoc = false;
      if (this.skipDoc) { this.skipDoc = false; return; }
      if (end - start > this.opts.maxDocSize) {
        this.fail(this.items.ops.length - 1, 400, 'document_too_large_exception', `line ${this.lineNo}: the document is ${end - start} bytes, more than limits.max_doc_size (${this.opts.maxDocSize})`);
        return;
      }
      this.addDoc(raw, start, end, this.items.ops.length - 1);
      return;
    }
    // The action most shippers send, recognised without parsing it.
    if (isPlainIndex(raw, start, end)) {
      this.sawAction = true;
      this.newItem('index', this.opts.defaultIndex);
      this.expectDoc = true;
      return;
    }
    this.action(raw.subarray(start, end));
  }

  private action(text: Buffer): void {
    let parsed: unknown;
    let problem: string | null = null;
    try {
      parsed = JSON.parse(text.toString('utf8'));
    } catch (err) {
      problem = `malformed action line: ${(err as Error).message}`;
    }
    let op: string | undefined;
    let meta: Record<string, unknown> = {};
    if (problem === null) {
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) problem = 'the action line is not a JSON object';
      else {
        const keys = Object.keys(parsed);
        op = keys[0];
        if (keys.length !== 1) problem = `an action line has exactly one key (index or create); found ${keys.length}`;
        else if (op !== 'index' && op !== 'create') problem = `unsupported action "${op}"; expected "index" or "create"`;
        else {
          const m = (parsed as Record<string, unknown>)[op];
          if (typeof m === 'object' && m !== null && !Array.isArray(m)) meta = m as Record<string, unknown>;
        }
      }
    }
    if (problem !== null && !this.sawAction) {
      throw new BulkFormatError(this.lineNo, `${problem}; expected NDJSON: an action line such as {"index":{}} followed by a document line`);
    }
    this.sawAction = true;
    const index = typeof meta._index === 'string' ? meta._index : this.opts.defaultIndex;
    const item = this.newItem(op === 'create' ? 'create' : 'index', index);
    if (problem !== null) {
      this.fail(item, 400, 'illegal_argument_exception', `line ${this.lineNo}: ${problem}`);
      // "delete" has no document line; every other action is followed by one.
      this.expectDoc = op !== 'delete';
      this.skipDoc = this.expectDoc;
      return;
    }
    this.expectDoc = true;
  }

  private addDoc(src: Buffer, start: number, end: number, item: number): void {
    const len = end - start;
    let b = this.batch;
    let extend = this.runSrc === src && start >= this.runEnd && start - this.runEnd <= MAX_RUN_GAP;
    if (b) {
      const need = extend ? b.used + (end - this.runStart) : b.used + (this.runSrc ? this.runEnd - this.runStart : 0) + len;
      if (need > b.buf.length) {
        this.flush();
        b = null;
        extend = false;
      }
    }
    if (!b) {
      // An unpooled buffer of its own, so its ArrayBuffer can be moved to a worker.
      b = this.batch = { buf: Buffer.allocUnsafeSlow(Math.max(this.opts.batchBytes, len)), used: 0, offs: [], items: [] };
    }
    if (!extend) {
      this.closeRun();
      this.runSrc = src;
      this.runStart = start;
    }
    this.runEnd = end;
    b.offs.push(b.used + (start - this.runStart), len);
    b.items.push(item);
  }

  /** Copies the open run of documents into the batch. */
  private closeRun(): void {
    const src = this.runSrc;
    if (!src) return;
    this.runSrc = null;
    const b = this.batch!;
    src.copy(b.buf, b.used, this.runStart, this.runEnd);
    b.used += this.runEnd - this.runStart;
  }

  /** Hands the open batch to onBatch. */
  flush(): void {
    this.closeRun();
    const b = this.batch;
    if (!b || b.items.length === 0) return;
    this.batch = null;
    this.opts.onBatch({ buf: new Uint8Array(b.buf.buffer, 0, b.used), offs: Int32Array.from(b.offs), items: b.items });
  }
}
