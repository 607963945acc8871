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

/** One document's place in the response. */
export interface BulkItems {
  ops: BulkOp[];
  indexes: string[];
  ids: (string | null)[];
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

export class BulkParser {
  readonly items: BulkItems = { ops: [], indexes: [], ids: [], errors: new Map() };
  private parts: Buffer[] = [];
  private partLen = 0;
  private oversize = false;
  private lineNo = 0;
  private expectDoc = false;
  /** The document line after an action that failed is skipped, and its item already carries the error. */
  private skipDoc = false;
  private sawAction = false;
  private batch: { buf: Buffer; used: number; offs: number[]; items: number[] } | null = null;

  constructor(private readonly opts: BulkParserOptions) {}

  get documents(): number {
    return this.items.ops.length;
  }

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) {
        this.partial(chunk.subarray(start));
        return;
      }
      const piece = chunk.subarray(start, nl);
      if (this.partLen === 0 && !this.oversize) this.line(piece);
      else {
        this.partial(piece);
        const whole = this.oversize ? null : this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partLen);
        const over = this.oversize;
        const size = this.partLen;
        this.parts = [];
        this.partLen = 0;
        this.oversize = false;
        if (over) this.oversizeLine(size);
        else this.line(whole!);
      }
      start = nl + 1;
    }
  }

  /** Ends the body: the last line may lack its newline; flushes the open batch. */
  end(): void {
    if (this.oversize) this.oversizeLine(this.partLen);
    else if (this.partLen > 0) this.line(Buffer.concat(this.parts, this.partLen));
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
    this.items.ids.push(null);
    return this.items.ops.length - 1;
  }

  private fail(item: number, status: number, type: string, reason: string): void {
    this.items.errors.set(item, { status, type, reason });
  }

  private line(raw: Buffer): void {
    this.lineNo++;
    let end = raw.length;
    while (end > 0 && (raw[end - 1] === 13 || raw[end - 1] === 32 || raw[end - 1] === 9)) end--;
    let start = 0;
    while (start < end && (raw[start] === 32 || raw[start] === 9)) start++;
    if (start === end) return;
    const text = raw.subarray(start, end);
    if (this.expectDoc) {
      this.expectDoc = false;
      if (this.skipDoc) { this.skipDoc = false; return; }
      if (text.length > this.opts.maxDocSize) {
        this.fail(this.items.ops.length - 1, 400, 'document_too_large_exception', `line ${this.lineNo}: the document is ${text.length} bytes, more than limits.max_doc_size (${this.opts.maxDocSize})`);
        return;
      }
      this.addDoc(text, this.items.ops.length - 1);
      return;
    }
    this.action(text);
  }

  private action(text: Buffer): void {
    // The action most shippers send, recognised without parsing it.
    if (text.length === PLAIN_INDEX.length && text.equals(PLAIN_INDEX)) {
      this.sawAction = true;
      this.newItem('index', this.opts.defaultIndex);
      this.expectDoc = true;
      return;
    }
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

  private addDoc(text: Buffer, item: number): void {
    const len = text.length;
    if (this.batch && this.batch.used + len > this.batch.buf.length) this.flush();
    if (!this.batch) {
      // An unpooled buffer of its own, so its ArrayBuffer can be moved to a worker.
      this.batch = { buf: Buffer.allocUnsafeSlow(Math.max(this.opts.batchBytes, len)), used: 0, offs: [], items: [] };
    }
    const b = this.batch;
    text.copy(b.buf, b.used);
    b.offs.push(b.used, len);
    b.items.push(item);
    b.used += len;
  }

  /** Hands the open batch to onBatch. */
  flush(): void {
    const b = this.batch;
    if (!b || b.items.length === 0) return;
    this.batch = null;
    this.opts.onBatch({ buf: new Uint8Array(b.buf.buffer, 0, b.used), offs: Int32Array.from(b.offs), items: b.items });
  }
}
