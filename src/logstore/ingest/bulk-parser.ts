// Streaming NDJSON bulk parser (main thread): splits action/document pairs into batches of raw document
// bytes for the shards; only action lines are parsed here, documents are parsed and tokenized in workers.

import { isPlainIndex, readPlainAction } from './action-line.js';
import { BulkItems, type BulkOp } from './bulk-items.js';
import type { ScratchPool } from '../search/scratch.js';

export { BulkItems, type BulkOp, type ItemError } from './bulk-items.js';

/** Elasticsearch's limit on a document id (bytes of UTF-8). */
export const MAX_ID_BYTES = 512;

export class BulkFormatError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'BulkFormatError';
  }
}

export interface Batch {
  buf: Uint8Array;
  /** (start, length) of each document in buf. */
  offs: Int32Array;
  /** Item number of each document. */
  items: number[];
  /** The shard that must store the batch (its documents carry ids routed there), or -1: any shard. */
  shard: number;
  /** Client `_id` of each document (null: none), or null when no document of the batch has one. */
  ids: (string | null)[] | null;
  /** 1 where the document's action is `create` (only read for documents with an id), or null. */
  create: Uint8Array | null;
}

export interface BulkParserOptions {
  maxDocSize: number;
  defaultIndex: string;
  batchBytes: number;
  onBatch(batch: Batch): void;
  /**
   * The shard a document with a client `_id` must go to, so that every copy of one id meets the same shard's
   * existence check (as Elasticsearch routes by id). Absent: documents with ids travel in the ordinary batches.
   */
  route?: (id: string) => number;
  /** Read the items only: documents are checked for size but not copied into batches (a rejected bulk). */
  discard?: boolean;
  /**
   * Batch buffers come from this pool (a proxy's, which copies each batch into its gRPC message and gives the
   * buffer back): a batch is then handed over as a view of its buffer, never copied to its size.
   */
  pool?: ScratchPool;
}

interface OpenBatch {
  buf: Buffer;
  used: number;
  offs: number[];
  items: number[];
  ids: (string | null)[] | null;
  create: number[] | null;
}

const MAX_ACTION_LINE = 64 * 1024;
/** Bytes between two documents of one chunk (their action line) copied along rather than cutting the copy. */
const MAX_RUN_GAP = 256;

export class BulkParser {
  readonly items = new BulkItems();
  private parts: Buffer[] = [];
  private partLen = 0;
  private oversize = false;
  private lineNo = 0;
  private expectDoc = false;
  /** The document line after an action that failed is skipped, and its item already carries the error. */
  private skipDoc = false;
  private sawAction = false;
  private batch: OpenBatch | null = null;
  /** Open batches of documents with a client `_id`, by the shard they are routed to. */
  private readonly routed = new Map<number, OpenBatch>();
  /**
   * Documents of one chunk are copied into the batch together, with the action lines between them, in
   * one copy: source bytes [runStart, runEnd) of runSrc go to batch bytes from runDst (= batch.used).
   */
  private runSrc: Buffer | null = null;
  private runStart = 0;
  private runEnd = 0;

  constructor(private readonly opts: BulkParserOptions) {}

  get documents(): number {
    return this.items.count;
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
        const whole = this.oversize
          ? null
          : this.parts.length === 1
            ? this.parts[0]!
            : Buffer.concat(this.parts, this.partLen);
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
    if (this.expectDoc && !this.skipDoc)
      this.fail(
        this.items.count - 1,
        400,
        'action_request_validation_exception',
        `line ${this.lineNo}: an action line without its document line`,
      );
    if (!this.sawAction)
      throw new BulkFormatError(0, 'the request body is empty; expected NDJSON action and document lines');
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
      if (!this.sawAction)
        throw new BulkFormatError(
          this.lineNo,
          `the first line is ${size} bytes long; expected an action line such as {"index":{}}`,
        );
      this.fail(
        this.newItem('index', this.opts.defaultIndex, null),
        400,
        'illegal_argument_exception',
        `line ${this.lineNo}: action line longer than ${MAX_ACTION_LINE} bytes`,
      );
      this.expectDoc = true;
      this.skipDoc = true;
      return;
    }
    this.expectDoc = false;
    if (this.skipDoc) {
      this.skipDoc = false;
      return;
    }
    const item = this.items.count - 1;
    this.fail(
      item,
      400,
      'document_too_large_exception',
      `line ${this.lineNo}: the document is ${size} bytes, more than limits.max_doc_size (${this.opts.maxDocSize})`,
    );
  }

  private newItem(op: BulkOp, index: string, id: string | null): number {
    return this.items.push(op, index, id);
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
      if (this.skipDoc) {
        this.skipDoc = false;
        return;
      }
      if (end - start > this.opts.maxDocSize) {
        this.fail(
          this.items.count - 1,
          400,
          'document_too_large_exception',
          `line ${this.lineNo}: the document is ${end - start} bytes, more than limits.max_doc_size (${this.opts.maxDocSize})`,
        );
        return;
      }
      this.addDoc(raw, start, end, this.items.count - 1);
      return;
    }
    // The action most shippers send, recognised without parsing it.
    if (isPlainIndex(raw, start, end)) {
      this.sawAction = true;
      this.newItem('index', this.opts.defaultIndex, null);
      this.expectDoc = true;
      return;
    }
    const plain = readPlainAction(raw, start, end);
    if (plain) this.takeAction(plain.op, plain.meta, null);
    else this.action(raw.subarray(start, end));
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
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        problem = 'the action line is not a JSON object';
      else {
        const keys = Object.keys(parsed);
        op = keys[0];
        if (keys.length !== 1)
          problem = `an action line has exactly one key (index, create, update or delete); found ${keys.length}`;
        else if (op !== 'index' && op !== 'create' && op !== 'update' && op !== 'delete')
          problem = `unsupported action "${op}"; expected "index" or "create"`;
        else {
          const m = (parsed as Record<string, unknown>)[op];
          if (typeof m === 'object' && m !== null && !Array.isArray(m)) meta = m as Record<string, unknown>;
        }
      }
    }
    this.takeAction(op, meta, problem);
  }

  private takeAction(op: string | undefined, meta: Record<string, unknown>, problem: string | null): void {
    if (problem !== null && !this.sawAction) {
      throw new BulkFormatError(
        this.lineNo,
        `${problem}; expected NDJSON: an action line such as {"index":{}} followed by a document line`,
      );
    }
    this.sawAction = true;
    const index = typeof meta._index === 'string' ? meta._index : this.opts.defaultIndex;
    const rawId = meta._id;
    const id =
      typeof rawId === 'string' ? rawId : typeof rawId === 'number' && Number.isFinite(rawId) ? String(rawId) : null;
    const known = op === 'create' || op === 'update' || op === 'delete' ? op : 'index';
    const item = this.newItem(known, index, id);
    // "delete" has no document line; every other action is followed by one.
    this.expectDoc = op !== 'delete';
    if (problem === null && (op === 'update' || op === 'delete')) {
      problem = `the log store is append-only: "${op}" is not supported (documents are only added, with index or create)`;
    } else if (problem === null && rawId !== undefined && rawId !== null) {
      if (id === null) problem = `_id must be a string; found ${JSON.stringify(rawId)}`;
      else if (id === '') problem = 'if _id is specified it must not be empty';
      else if (Buffer.byteLength(id) > MAX_ID_BYTES)
        problem = `_id is too long, must be no longer than ${MAX_ID_BYTES} bytes but was: ${Buffer.byteLength(id)}`;
    }
    if (problem !== null) {
      this.fail(
        item,
        400,
        op === 'update' || op === 'delete' ? 'action_request_validation_exception' : 'illegal_argument_exception',
        `line ${this.lineNo}: ${problem}`,
      );
      this.skipDoc = this.expectDoc;
    }
  }

  private addDoc(src: Buffer, start: number, end: number, item: number): void {
    if (this.opts.discard) return;
    const id = this.items.id(item);
    if (id !== null && this.opts.route) {
      this.addRouted(src, start, end, item, id, this.opts.route(id));
      return;
    }
    const len = end - start;
    let b = this.batch;
    let extend = this.runSrc === src && start >= this.runEnd && start - this.runEnd <= MAX_RUN_GAP;
    if (b) {
      const need = extend
        ? b.used + (end - this.runStart)
        : b.used + (this.runSrc ? this.runEnd - this.runStart : 0) + len;
      if (need > b.buf.length) {
        this.flush(false);
        b = null;
        extend = false;
      }
    }
    if (!b) {
      // An unpooled buffer of its own, so its ArrayBuffer can be moved to a worker.
      b = this.batch = this.newBatch(len);
    }
    if (!extend) {
      this.closeRun();
      this.runSrc = src;
      this.runStart = start;
    }
    this.runEnd = end;
    b.offs.push(b.used + (start - this.runStart), len);
    this.note(b, item, id);
  }

  private newBatch(len: number): OpenBatch {
    const size = Math.max(this.opts.batchBytes, len);
    // An unpooled buffer of its own, so its ArrayBuffer can be moved to a worker.
    const buf = this.opts.pool ? this.opts.pool.take(size) : Buffer.allocUnsafeSlow(size);
    return { buf, used: 0, offs: [], items: [], ids: null, create: null };
  }

  /** Records the item, and its id and action when it has an id, of the document just placed in `b`. */
  private note(b: OpenBatch, item: number, id: string | null): void {
    const k = b.items.length;
    b.items.push(item);
    if (id === null && b.ids === null) return;
    if (b.ids === null) {
      b.ids = new Array<string | null>(k).fill(null);
      b.create = new Array<number>(k).fill(0);
    }
    b.ids.push(id);
    b.create!.push(id !== null && this.items.op(item) === 'create' ? 1 : 0);
  }

  /** A document with a client id goes to the batch of its shard (copied on its own). */
  private addRouted(src: Buffer, start: number, end: number, item: number, id: string, shard: number): void {
    const len = end - start;
    let b = this.routed.get(shard);
    if (b && b.used + len > b.buf.length) {
      this.emit(b, shard);
      b = undefined;
    }
    if (!b) this.routed.set(shard, (b = this.newBatch(len)));
    src.copy(b.buf, b.used, start, end);
    b.offs.push(b.used, len);
    b.used += len;
    this.note(b, item, id);
  }

  private emit(b: OpenBatch, shard: number): void {
    if (shard >= 0) this.routed.delete(shard);
    if (b.items.length === 0) return;
    // The shard keeps the batch's buffer as long as its active fraction: a small bulk's batch is copied to its
    // size, or 50 documents from a shipper would hold a whole batch buffer each.
    // A pooled buffer goes back to its pool once its taker has copied it, so its view is enough.
    const buf =
      this.opts.pool || b.used >= b.buf.length >>> 1
        ? new Uint8Array(b.buf.buffer, 0, b.used)
        : new Uint8Array(b.buf.subarray(0, b.used));
    this.opts.onBatch({
      buf,
      offs: Int32Array.from(b.offs),
      items: b.items,
      shard,
      ids: b.ids,
      create: b.create ? Uint8Array.from(b.create) : null,
    });
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

  /** Hands the open batch to onBatch (and, at the end of the body, the routed ones). */
  flush(routedToo = true): void {
    this.closeRun();
    const b = this.batch;
    this.batch = null;
    if (b) this.emit(b, -1);
    if (routedToo) for (const [shard, r] of [...this.routed]) this.emit(r, shard);
  }
}
