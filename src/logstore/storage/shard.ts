// A shard: one directory of fractions (one active, many sealed) with its catalog; owned by one thread.
// The same class serves single mode and store mode: callers hand it batches and query plans.
import { isUtf8 } from 'node:buffer';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { IdMaker, OWN_SHARD, docTime, formatIdTailInto, idTime } from '../doc-time.js';
import type { MappingSpec } from '../mapping.js';
import type { FieldsPipe } from '../query/ast.js';
import { type ShardHit, type ShardQuery, type ShardQueryResult, executeQuery, fetchByIds } from '../search/execute.js';
import { ActiveFraction } from './active-fraction.js';
import { ActiveSearch } from './active-search.js';
import { Catalog, type FractionRow } from './catalog.js';
import type { FractionView } from './fraction-view.js';
import { SealedFraction } from './sealed-fraction.js';
import { sealFraction } from './seal.js';
import { QUARANTINE_DIR, Wal, type WalReplay, encodeWalInto, isDiskFull } from './wal.js';
import { readReason, writeReason } from './quarantine.js';
import { FractionDamagedError, fsyncDir } from './fraction-files.js';
import type { ShardStateWriter } from './shard-state.js';
import { ChunkQueue, INGEST_CHUNK } from './chunk-queue.js';
import { clientIdHash, withClientIdBound, withClientIdInto } from './client-ids.js';
import type { DocBatch } from '../../native/doc-indexer.js';

export interface ShardOptions {
  dir: string;
  shard: number;
  mapping: MappingSpec;
  fracSize: number;
  /** Disk bytes this shard may keep (its share of storage.total_size); 0: no limit. */
  totalSize: number;
  /** Milliseconds; 0: keep forever. */
  retention: number;
}

/**
 * Ids made by the caller (a proxy): document i of a batch gets shard `shard` and counter `counter + i`, or
 * `counters[i]` when given (a batch split across local shards keeps each document's counter).
 */
/** The shard state's count of searches that list the sealed fractions themselves (shard-state.ts). */
export type ListedReads = Pick<ShardStateWriter, 'mustKeep' | 'readers' | 'swept'>;

export interface IdAssign {
  shard: number;
  counter: number;
  counters?: number[];
}

export interface IngestResult {
  /** One id per document as 24 ASCII bytes, or 24 spaces where it failed or was kept. */
  ids: Uint8Array;
  /** Failed documents; the status is 400 when absent. */
  errors: [index: number, type: string, reason: string, status?: number][];
  /** Documents whose client id (action `index`) was stored already: the first copy is kept, nothing is written. */
  kept?: number[];
}

/** Client ids of a batch's documents and which of them are `create` actions. */
export interface IngestIds {
  ids: (string | null)[] | null;
  create: Uint8Array | null;
}

/** Data this shard lost or set aside since it was opened, or finds set aside by an earlier run (quarantine/). */
export interface StorageProblem {
  kind: 'wal_tail_dropped' | 'fraction_quarantined' | 'quarantine_not_empty' | 'disk_full' | 'write_failed';
  /** The fraction (or, for quarantine_not_empty, the entry of quarantine/) concerned. */
  name: string;
  detail: string;
  /** ISO time it was found. */
  at: string;
  /** Documents set aside (a quarantined fraction) or records dropped (a write-ahead tail). */
  docs?: number;
  bytes?: number;
  /** Where the damaged fraction or the dropped bytes were moved or copied. */
  saved_to?: string | null;
}

export interface ShardStatus {
  shard: number;
  fractions: FractionRow[];
  fields: string[];
  /** The shard thread was busy (a search): these are its figures from the last time it answered (Store.status). */
  stale?: boolean;
  /** With `stale`: how long the shard thread has left a status request unanswered. */
  busy_ms?: number;
  /**
   * Searches reading this shard's sealed fractions now (pinned, or listed by a search thread itself): retention keeps
   * their files.
   */
  open_searches?: number;
  problems: StorageProblem[];
}

/**
 * A search's first step on its shard thread (Shard.queryActive): the whole answer when no sealed fraction is in
 * its range, else the active fraction's part and the sealed fractions (pinned) that a search thread reads next.
 */
export interface ActiveStep {
  /** The answer (no `sealed`), or the active fraction's part of it (when `part` is true). */
  result: ShardQueryResult;
  /** The active fraction overlaps the range: `result` is its part (a RunPart with these bounds). */
  part?: { minTime: number; maxTime: number };
  /** The sealed fractions to read, in the shard's order, pinned until unpin(pin). */
  sealed?: { pin: number; names: string[] };
  /** Quarantined fractions in the range (the answer is partial): added to the sealed part's answer. */
  damaged?: string[];
}

/** queryActive's answer: the step, or { more } while the active part has slices left (queryActiveMore). */
export type ActiveAnswer = ActiveStep | { more: number };

/**
 * Time a slice of a search's active part may take before the writes queued meanwhile get the shard thread (a slice
 * ends at the first chunk of work past it: a few hundred dictionary tokens, or the last step of the search).
 */
export const ACTIVE_SLICE_MS = 10;

/** Wait before a seal that failed for a full disk is tried again (each try writes most of a fraction). */
const SEAL_RETRY_MS = 10_000;

/** Largest write-ahead scratch buffer a shard keeps between chunks. */
const WAL_SCRATCH_MAX = 1 << 20;

export class Shard {
  private readonly catalog: Catalog;
  private readonly sealed = new Map<string, { frac: SealedFraction; row: FractionRow }>();
  private active!: ActiveFraction;
  private wal!: Wal;
  private seq = 0;
  private readonly ids: IdMaker;
  private readonly fieldsSeen = new Set<string>();
  /** Fractions sealed by this object (the worker collects garbage after each: a sealed index is all garbage). */
  seals = 0;
  /** Fractions quarantined by this object (the worker tells the HTTP thread's reader when it changes). */
  quarantines = 0;
  private readonly problems: StorageProblem[] = [];
  /** The current full-disk episode, or null. */
  private diskFull: StorageProblem | null = null;
  /** When a seal that failed for a full disk may be tried again (0: none failed). */
  private sealRetryAt = 0;
  /** Time ranges of the fractions in quarantine/ (this run's and earlier ones'): a search over them is partial. */
  private readonly setAside: { name: string; min_time: number; max_time: number }[] = [];
  /** Sealed fractions a search thread reads (name -> searches): retention leaves their files until they end. */
  private readonly pinned = new Map<string, number>();
  /** Pins handed out by queryActive and not given back: the fractions each holds. */
  private readonly pins = new Map<number, string[]>();
  private pinSeq = 0;
  /**
   * Fractions retention dropped while a search read them (pinned, or listed by a search thread itself): their
   * directories are removed when the last search reading them ends (unpin, sweepDropped).
   */
  private readonly doomed = new Set<string>();
  /** The searches that list the sealed fractions themselves (shard-state.ts), when a search thread may do so. */
  private listedReads: ListedReads | null = null;
  /** Active parts of searches under way (queryActive / queryActiveMore), by id. */
  private readonly searches = new Map<number, { search: ActiveSearch; names: string[]; pin: number }>();
  private searchSeq = 0;
  /** Active fractions searches read (fraction -> searches), and those of them replaced since (seal, rollback). */
  private readonly reading = new Map<ActiveFraction, number>();
  private readonly retired = new Set<ActiveFraction>();

  /**
   * `beforeSeal` runs right before a seal (the shard thread collects its garbage there): the seal's own
   * allocations then come on top of the fraction alone, not of the parsing garbage that V8 lets pile up to
   * as much again before it collects.
   */
  constructor(
    readonly opts: ShardOptions,
    private readonly log: Logger,
    private readonly beforeSeal?: () => void,
  ) {
    mkdirSync(opts.dir, { recursive: true });
    this.catalog = new Catalog(path.join(opts.dir, 'catalog.db'));
    this.ids = new IdMaker(opts.shard);
    this.recover();
  }

  private fracDir(name: string): string {
    return path.join(this.opts.dir, name);
  }

  private walFile(name: string): string {
    return path.join(this.opts.dir, `${name}.wal`);
  }

  /** Opens sealed fractions, replays the active write-ahead file, removes leftovers of an interrupted seal. */
  private recover(): void {
    this.noteQuarantine();
    const rows = this.catalog.list();
    let activeRow: FractionRow | undefined;
    for (const row of rows) {
      this.seq = Math.max(this.seq, Number(row.name.slice(5)) || 0);
      if (row.state === 'sealed') {
        if (!existsSync(this.fracDir(row.name))) {
          this.log.error({ fraction: row.name }, 'sealed fraction directory missing; dropping it from the catalog');
          this.catalog.remove(row.name);
          continue;
        }
        let frac: SealedFraction;
        try {
          frac = new SealedFraction(this.fracDir(row.name));
        } catch (err) {
          if (!(err instanceof FractionDamagedError)) throw err;
          this.quarantine(row, err);
          continue;
        }
        this.sealed.set(row.name, { frac, row });
        for (const f of frac.fields()) this.fieldsSeen.add(f);
        rmSync(this.walFile(row.name), { force: true });
      } else if (!activeRow || row.name > activeRow.name) activeRow = row;
    }
    const known = new Set(rows.map((r) => r.name));
    for (const entry of readdirSync(this.opts.dir)) {
      const base = entry.replace(/\.(wal|tmp)$/, '');
      if (entry.startsWith('frac-') && (!known.has(base) || entry.endsWith('.tmp'))) {
        if (activeRow && base === activeRow.name && entry.endsWith('.wal')) continue;
        rmSync(path.join(this.opts.dir, entry), { recursive: true, force: true });
      }
    }
    if (activeRow) {
      // A directory under the active name is a seal that did not reach the catalog: it is redone later.
      rmSync(this.fracDir(activeRow.name), { recursive: true, force: true });
      this.openActive(activeRow.name);
      const { records: n, loss } = this.replayActive();
      for (const f of this.active.fields()) this.fieldsSeen.add(f);
      if (n > 0) this.ids.continueAfter(this.active.id(n - 1));
      if (loss) {
        // A crash in the middle of a write leaves a cut record that was never acknowledged; anything more (a file
        // cut short, changed bytes) loses acknowledged documents. Replay cannot tell the two apart, so both are errors.
        // Records of a file cut short are gone with its end: only the bytes left after the last whole record count.
        const what =
          loss.reason === 'cut'
            ? 'ends inside a record (cut short: records past its end, if any, cannot be counted)'
            : loss.reason === 'checksum'
              ? 'has a record that fails its checksum'
              : 'has a record of impossible length';
        const detail = `write-ahead file ${what} at byte ${loss.offset}: ${loss.bytes} bytes dropped, at least ${loss.records} records; ${n} records replayed`;
        this.log.error(
          {
            fraction: activeRow.name,
            offset: loss.offset,
            dropped_bytes: loss.bytes,
            dropped_records_at_least: loss.records,
            reason: loss.reason,
            kept_records: n,
            saved_to: loss.savedTo,
          },
          'write-ahead file damaged: replayed up to the last valid record, the rest is dropped',
        );
        this.problems.push({
          kind: 'wal_tail_dropped',
          name: activeRow.name,
          detail,
          at: new Date().toISOString(),
          docs: loss.records,
          bytes: loss.bytes,
          saved_to: loss.savedTo,
        });
      }
      this.log.info({ fraction: activeRow.name, docs: n }, 'active fraction replayed');
    } else this.newActive();
  }

  /** Indexes the records of the active fraction's write-ahead file into the active fraction (a fresh one). */
  private replayActive(): WalReplay {
    return this.wal.replay((r, buf, docOffset) => {
      const doc = JSON.parse(buf.toString('utf8', docOffset, docOffset + r.doc.length)) as Record<string, unknown>;
      this.active.add(doc, buf, docOffset, r.doc.length, r.time, r.counter);
    });
  }

  /** Entries an earlier run left in quarantine/: reported until the operator removes them. */
  private noteQuarantine(): void {
    const dir = path.join(this.opts.dir, QUARANTINE_DIR);
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir).sort()) {
      const why = readReason(path.join(dir, entry));
      if (why) this.setAside.push(why.row);
      const detail = `set aside by an earlier run${why ? ` (${why.detail})` : ''}; remove it from ${dir} once inspected`;
      this.problems.push({
        kind: 'quarantine_not_empty',
        name: entry,
        detail,
        at: new Date().toISOString(),
        ...(why ? { docs: why.row.docs } : {}),
        saved_to: path.join(dir, entry),
      });
    }
  }

  /**
   * Sets a damaged sealed fraction aside: closed, moved into quarantine/ (kept for inspection, never read again),
   * then removed from the catalog. When the move fails the catalog keeps it, so the next start finds it again
   * instead of deleting it as a leftover.
   */
  private quarantine(row: FractionRow, err: FractionDamagedError): void {
    const open = this.sealed.get(row.name);
    open?.frac.close();
    this.sealed.delete(row.name);
    this.idFractions = null;
    this.quarantines++;
    const qdir = path.join(this.opts.dir, QUARANTINE_DIR);
    let savedTo: string | null = path.join(qdir, `${row.name}.${Date.now()}`);
    try {
      mkdirSync(qdir, { recursive: true });
      renameSync(this.fracDir(row.name), savedTo);
      fsyncDir(this.opts.dir);
      this.catalog.remove(row.name);
    } catch (moveErr) {
      this.log.error(
        { fraction: row.name, err: (moveErr as Error).message },
        'could not move a damaged fraction into quarantine; it stays in the catalog and is skipped',
      );
      savedTo = null;
    }
    if (savedTo) {
      try {
        writeReason(savedTo, { row, detail: `${err.file}: ${err.detail}` });
      } catch (writeErr) {
        this.log.warn(
          { fraction: row.name, err: (writeErr as Error).message },
          'could not note why a fraction was quarantined; the next start reports it without its time range',
        );
      }
    }
    this.setAside.push(row);
    this.log.error(
      { fraction: row.name, file: err.file, detail: err.detail, docs: row.docs, saved_to: savedTo },
      'sealed fraction damaged: quarantined, searches answer from the other fractions',
    );
    this.problems.push({
      kind: 'fraction_quarantined',
      name: row.name,
      detail: `${err.file}: ${err.detail}`,
      at: new Date().toISOString(),
      docs: row.docs,
      saved_to: savedTo,
    });
  }

  /**
   * Runs `read` over the fractions, and again without a sealed fraction each time one turns out damaged (it is
   * quarantined): the answer covers every healthy fraction; `skipped` names the ones left out.
   */
  private readAround<T>(read: () => T): { value: T; skipped: string[] } {
    const skipped: string[] = [];
    for (;;) {
      try {
        return { value: read(), skipped };
      } catch (err) {
        const s = err instanceof FractionDamagedError ? this.sealed.get(err.fraction) : undefined;
        if (!s) throw err;
        this.quarantine(s.row, err as FractionDamagedError);
        skipped.push(s.row.name);
      }
    }
  }

  private openActive(name: string): void {
    this.active = new ActiveFraction(name, this.opts.mapping, this.ids.shardHex);
    this.wal = new Wal(this.walFile(name));
  }

  private newActive(): void {
    const name = `frac-${String(++this.seq).padStart(10, '0')}`;
    this.catalog.addActive(name);
    this.openActive(name);
  }

  /**
   * Parses a batch of document lines, appends them to the write-ahead file and indexes them, in chunks so
   * parsed documents die young; one fsync at the end makes the batch durable before it is acknowledged.
   * The index only ever holds documents already written to the write-ahead file.
   */
  ingest(
    buf: Uint8Array,
    offs: Int32Array,
    now = Date.now(),
    assign?: IdAssign,
    meta?: IngestIds | null,
  ): IngestResult {
    const n = offs.length >>> 1;
    const data = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    const queue = this.queue;
    queue.clear(); // left over only if a previous batch threw
    const errors: IngestResult['errors'] = [];
    const kept: number[] = [];
    const ids = Buffer.alloc(24 * n, 0x20);
    const clientIds = meta?.ids ?? null;
    // Client ids of this batch not yet in the active fraction (they reach it at the next flush).
    const pending = new Set<string>();
    // Invalid UTF-8 is repaired (each bad sequence becomes U+FFFD), so what is stored and answered is valid.
    const valid = isUtf8(data);
    // Documents with a client id are rewritten (their `_id` first) into one buffer of the batch.
    let side: Buffer | null = null;
    let sideUsed = 0;
    if (clientIds) {
      let bound = 0;
      for (let i = 0; i < n; i++) {
        const cid = clientIds[i];
        if (cid != null) bound += withClientIdBound(offs[2 * i + 1]! * (valid ? 1 : 3), cid);
      }
      side = Buffer.allocUnsafeSlow(bound);
    }
    // Documents without a client id are scanned and tokenized in one native call (native/doc-indexer.cc); the ones
    // it leaves (time NaN: not JSON, clamped times, shapes it does not reproduce exactly) are parsed below.
    const scanned = valid && !clientIds && n > 0 ? this.active.index.indexBatch(data, offs, 0, n, now) : null;
    let stored = 0;
    // The first document of the chunk being queued: when its write fails, it and every one after it are not stored.
    let chunkFirst = 0;
    let full = false;
    // Where this batch's records start in the write-ahead file: a failed fsync cuts the file back to here.
    const walStart = this.wal.bytes;
    try {
      for (let i = 0; i < n; i++) {
        const start = offs[2 * i]!;
        const len = offs[2 * i + 1]!;
        if (scanned !== null && !Number.isNaN(scanned.times[i]!)) {
          if (queue.count === 0) chunkFirst = i;
          this.store(queue, ids, i, scanned.times[i]!, data, start, len, null, i, assign);
          if (queue.count === INGEST_CHUNK) stored += this.flush(queue, scanned, pending);
          continue;
        }
        const text = data.toString('utf8', start, start + len);
        let doc: unknown;
        try {
          doc = JSON.parse(text);
        } catch (err) {
          errors.push([i, 'mapper_parsing_exception', `failed to parse the document: ${(err as Error).message}`]);
          continue;
        }
        if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
          errors.push([
            i,
            'mapper_parsing_exception',
            `the document is not a JSON object (found ${Array.isArray(doc) ? 'an array' : doc === null ? 'null' : typeof doc})`,
          ]);
          continue;
        }
        const obj = doc as Record<string, unknown>;
        if (obj._id !== undefined) {
          errors.push([
            i,
            'mapper_parsing_exception',
            'Field [_id] is a metadata field and cannot be added inside a document. Use the index API request parameters.',
          ]);
          continue;
        }
        const cid = clientIds?.[i] ?? null;
        if (cid !== null) {
          if (pending.has(cid) || this.hasClientId(cid)) {
            if (meta!.create?.[i])
              errors.push([
                i,
                'version_conflict_engine_exception',
                `[${cid}]: version conflict, document already exists (current version [1])`,
                409,
              ]);
            else kept.push(i);
            continue;
          }
          pending.add(cid);
          obj._id = cid;
        }
        const t = docTime(obj, now);
        let bytes: Uint8Array = data.subarray(start, start + len);
        if (t.clampedFrom !== undefined) {
          obj.original_timestamp = t.clampedFrom;
          bytes = Buffer.from(JSON.stringify(cid === null ? obj : { _id: cid, ...obj }));
        } else {
          if (!valid && !isUtf8(bytes)) bytes = Buffer.from(text);
          if (cid !== null) {
            const w = withClientIdInto(side!, sideUsed, bytes, cid);
            bytes = side!.subarray(sideUsed, sideUsed + w);
            sideUsed += w;
          }
        }
        // The buffer the bytes are in: the batch, the side buffer, or their own.
        const base =
          bytes.buffer === data.buffer
            ? data
            : side !== null && bytes.buffer === side.buffer
              ? side
              : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
        if (queue.count === 0) chunkFirst = i;
        this.store(queue, ids, i, t.time, base, bytes.byteOffset - base.byteOffset, bytes.length, obj, -1, assign);
        if (queue.count === INGEST_CHUNK) stored += this.flush(queue, scanned, pending);
      }
      stored += this.flush(queue, scanned, pending);
    } catch (err) {
      if (!isDiskFull(err)) {
        // Another write error (EIO): the chunks written before it are not synced, so none of the batch is stored.
        this.rollBack(walStart, err, 'write-ahead append');
        this.refuse(0, err, n, ids, errors, kept);
        return { ids, errors };
      }
      full = true;
      // Nothing of the failed chunk reached the index, and the write-ahead file is cut back to the chunks before it:
      // those are answered stored (after the sync below), this one and the rest of the batch not stored.
      this.noteWriteFailure(err, 'write-ahead append');
      this.refuse(chunkFirst, err, n, ids, errors, kept);
      queue.clear();
      pending.clear();
    }
    if (stored) {
      try {
        this.wal.sync();
      } catch (err) {
        // The bytes may or may not be on disk: cut back and rebuilt, the batch is surely not stored, then so answered.
        this.rollBack(walStart, err, 'write-ahead fsync');
        this.refuse(0, err, n, ids, errors, kept);
        return { ids, errors };
      }
      if (this.fieldsSeen.size < 10_000) for (const f of this.active.fields()) this.fieldsSeen.add(f);
      // Sealed at frac_size of raw documents, or at half of it in memory: writing the sealed files takes about as
      // much again for a moment, so a shard stays near frac_size of memory whatever its documents' cardinality.
      if (
        (this.active.rawBytes >= this.opts.fracSize || this.active.memoryBytes >= this.opts.fracSize / 2) &&
        Date.now() >= this.sealRetryAt
      )
        this.trySeal();
      else if (this.sealRetryAt === 0 && !full) this.noteWritten();
    }
    return kept.length ? { ids, errors, kept } : { ids, errors };
  }

  /**
   * Answers documents `from` on of a batch of `n` not stored (a failed write or fsync). Documents answered 409 or
   * kept there are refused too: the copy they deferred to may be one of this batch's, now not stored. Invalid
   * ones stay 400.
   */
  private refuse(
    from: number,
    err: unknown,
    n: number,
    ids: Buffer,
    errors: IngestResult['errors'],
    kept: number[],
  ): void {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    // Elasticsearch's answer past its flood-stage watermark: 429 cluster_block_exception, which shippers (Beats,
    // Logstash, the clients' bulk helpers) retry; a 5xx item they may drop.
    const [type, reason, status] = isDiskFull(err)
      ? [
          'cluster_block_exception',
          `blocked by: [TOO_MANY_REQUESTS/12/disk full: not stored, no room to write it (${code})]`,
          429,
        ]
      : ['storage_exception', `not stored: the write-ahead file could not be written (${code})`, 500];
    const answered = new Set<number>();
    const keep = errors.filter((x) => x[0] < from || x[3] === undefined);
    for (const x of keep) answered.add(x[0]);
    const keptBefore = kept.filter((k) => k < from);
    for (const k of keptBefore) answered.add(k);
    errors.length = 0;
    errors.push(...keep);
    kept.length = 0;
    kept.push(...keptBefore);
    for (let j = from; j < n; j++) {
      if (answered.has(j)) continue;
      errors.push([j, type, reason, status]);
      ids.fill(0x20, 24 * j, 24 * j + 24);
    }
    errors.sort((x, y) => x[0] - y[0]);
  }

  /**
   * Undoes a batch after a write or fsync failed: the write-ahead file is cut back to `walStart` (durably) and the
   * active fraction rebuilt from it, so neither memory nor a replay holds any of the batch. When even the cut fails
   * nothing can say what is on disk; the process stops at once (as PostgreSQL panics on a failed fsync) without
   * answering the batch, and the next start replays what the disk holds.
   */
  private rollBack(walStart: number, err: unknown, during: string): void {
    this.noteWriteFailure(err, during);
    try {
      this.wal.truncate(walStart);
    } catch (cutErr) {
      const line = `${new Date().toISOString()} level=fatal shard=${this.opts.shard} fraction=${this.active.name} msg="${during} failed (${(err as Error).message}) and cutting the write-ahead file back failed too (${(cutErr as Error).message}): what is on disk is unknown; stopping, the next start replays it"\n`;
      try {
        writeSync(2, line);
      } finally {
        process.kill(process.pid, 'SIGKILL');
      }
      throw cutErr;
    }
    const started = Date.now();
    const name = this.active.name;
    this.retire(this.active);
    this.active = new ActiveFraction(name, this.opts.mapping, this.ids.shardHex);
    const { records, loss } = this.replayActive();
    if (loss) this.log.error({ fraction: name, ...loss }, 'write-ahead file damaged while a failed batch was undone');
    this.log.warn(
      { fraction: name, during, code: (err as NodeJS.ErrnoException).code, docs: records, ms: Date.now() - started },
      'batch not stored: the write-ahead file was cut back to before it and the active fraction rebuilt',
    );
  }

  /** Queued documents of a batch (one chunk at a time), reused from batch to batch. */
  private readonly queue = new ChunkQueue();
  /** The write-ahead records of a chunk, encoded (grown as needed, reused). */
  private walScratch = Buffer.alloc(0);

  /**
   * Writes the queued documents to the write-ahead file (no fsync) and adds them to the active fraction; returns how
   * many. `pending` (client ids of the batch not yet added) is cleared. A method, not a closure of ingest: a
   * closure made per call was compiled again per call (54 compiles in a profile of 1 M documents).
   */
  private flush(q: ChunkQueue, scanned: DocBatch | null, pending: Set<string>): number {
    const count = q.count;
    if (count === 0) return 0;
    // Chunks of large documents get a buffer of their own: the kept one stays within WAL_SCRATCH_MAX.
    let out = this.walScratch;
    if (out.length < q.walBytes) {
      out = Buffer.allocUnsafeSlow(Math.max(q.walBytes, Math.min(2 * out.length, WAL_SCRATCH_MAX)));
      if (out.length <= WAL_SCRATCH_MAX) this.walScratch = out;
    }
    let pos = 0;
    for (let i = 0; i < count; i++)
      pos = encodeWalInto(out, pos, q.time[i]!, q.counter[i]!, q.buf[i]!, q.start[i]!, q.len[i]!);
    this.wal.write(out.subarray(0, pos));
    const active = this.active;
    const batch = scanned ?? undefined;
    for (let i = 0; i < count; i++)
      active.add(q.doc[i]!, q.buf[i]!, q.start[i]!, q.len[i]!, q.time[i]!, q.counter[i]!, batch, q.scan[i]!);
    q.clear();
    pending.clear();
    return count;
  }

  /** Gives document i of a batch its id (written into `ids`) and queues it: `len` bytes at `start` of `buf`. */
  private store(
    q: ChunkQueue,
    ids: Buffer,
    i: number,
    time: number,
    buf: Buffer,
    start: number,
    len: number,
    doc: Record<string, unknown> | null,
    scan: number,
    assign?: IdAssign,
  ): void {
    let counter: number;
    if (assign) {
      const c = (assign.counters ? assign.counters[i]! : assign.counter + i) % 2 ** 40;
      counter = OWN_SHARD + (assign.shard & 0xff) * 2 ** 40 + c;
      formatIdTailInto(time, counter - OWN_SHARD, ids, 24 * i);
    } else {
      this.ids.nextInto(time, ids, 24 * i);
      counter = this.ids.current;
    }
    q.push(time, counter, buf, start, len, doc, scan);
  }

  /** Whether a document with client id `id` is stored in this shard (active or sealed, within retention). */
  hasClientId(id: string): boolean {
    const h = clientIdHash(id);
    if (this.active.hasClientId(id, h)) return true;
    return this.readAround(() => this.withClientIds().some((frac) => frac.hasClientId(id, h))).value;
  }

  /** Sealed fractions that hold documents with client ids (rebuilt when fractions are sealed or dropped). */
  private idFractions: SealedFraction[] | null = null;

  private withClientIds(): SealedFraction[] {
    return (this.idFractions ??= [...this.sealed.values()]
      .filter((s) => (s.frac.meta.clientIds ?? 0) > 0)
      .map((s) => s.frac));
  }

  /**
   * Seals after a batch that is already durable: a full disk must not turn that batch into an error (its documents
   * are stored), so the active fraction keeps growing on its write-ahead file and the seal is tried again later.
   */
  private trySeal(): void {
    try {
      this.seal();
      this.sealRetryAt = 0;
      this.noteWritten();
    } catch (err) {
      // Nothing of a failed seal is kept (see seal), so the active fraction and its write-ahead file are as before.
      this.sealRetryAt = Date.now() + SEAL_RETRY_MS;
      if (isDiskFull(err, this.opts.dir)) this.noteWriteFailure(err, 'seal');
      else
        this.log.error(
          { fraction: this.active.name, err: (err as Error).message },
          `seal failed: the active fraction keeps its documents and the seal is tried again in ${SEAL_RETRY_MS / 1000} s`,
        );
    }
  }

  /**
   * A full disk (or another write error: EIO): logged at error once per episode, reported in the status until
   * writes succeed again (the kind and detail follow the latest failure).
   */
  private noteWriteFailure(err: unknown, during: string): void {
    const code = (err as NodeJS.ErrnoException).code;
    const kind = isDiskFull(err, this.opts.dir) ? 'disk_full' : 'write_failed';
    if (this.diskFull) {
      this.diskFull.kind = kind;
      this.diskFull.detail = `${during} failed: ${code}`;
      return;
    }
    if (kind === 'disk_full')
      this.log.error(
        { during, code, err: (err as Error).message },
        'disk full: writes fail (documents answered not stored) until there is room again',
      );
    else
      this.log.error(
        { during, code, err: (err as Error).message },
        'write failed: documents answered not stored until writes succeed again',
      );
    this.diskFull = {
      kind,
      name: this.active.name,
      detail: `${during} failed: ${code}`,
      at: new Date().toISOString(),
    };
  }

  private noteWritten(): void {
    if (!this.diskFull) return;
    this.log.warn({ since: this.diskFull.at }, 'disk full episode over: writes succeed again');
    this.diskFull = null;
  }

  /**
   * Seals the active fraction (when it holds documents) and applies retention. Everything that can fail for room
   * (the sealed files, the next write-ahead file, the catalog) comes before the one catalog transaction that swaps
   * the fractions; a failure before it removes what it wrote and leaves the active fraction as it was, so the seal
   * can be tried again, and a crash anywhere leaves either the old state or the new one (recover removes the rest).
   */
  seal(): void {
    const frac = this.active;
    if (frac.docCount === 0) return;
    this.beforeSeal?.();
    const started = Date.now();
    const dir = this.fracDir(frac.name);
    const next = `frac-${String(this.seq + 1).padStart(10, '0')}`;
    let nextWal: Wal | null = null;
    let row: FractionRow;
    let diskBytes: number;
    try {
      const sealed = sealFraction(frac, dir);
      const meta = sealed.meta;
      diskBytes = sealed.diskBytes;
      row = {
        name: frac.name,
        state: 'sealed',
        min_time: meta.minTime,
        max_time: meta.maxTime,
        docs: meta.docCount,
        raw_bytes: meta.rawBytes,
        disk_bytes: diskBytes,
      };
      nextWal = new Wal(this.walFile(next));
      this.catalog.seal(row, next);
    } catch (err) {
      nextWal?.close();
      rmSync(this.walFile(next), { force: true });
      rmSync(`${dir}.tmp`, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    this.seq++;
    this.wal.close();
    rmSync(this.walFile(frac.name), { force: true });
    this.sealed.set(frac.name, { frac: new SealedFraction(dir), row });
    this.retire(frac);
    this.idFractions = null;
    this.seals++;
    this.log.info(
      {
        fraction: frac.name,
        docs: row.docs,
        raw_bytes: row.raw_bytes,
        disk_bytes: diskBytes,
        ms: Date.now() - started,
      },
      'fraction sealed',
    );
    this.active = new ActiveFraction(next, this.opts.mapping, this.ids.shardHex);
    this.wal = nextWal;
    try {
      this.applyRetention();
    } catch (err) {
      // The seal is done; retention runs again at its next pass.
      this.log.error({ err: (err as Error).message }, 'retention after a seal failed');
    }
  }

  /** Drops whole sealed fractions, oldest first, past the size share or the age limit. */
  applyRetention(now = Date.now()): string[] {
    const dropped: string[] = [];
    const byAge = [...this.sealed.values()].sort(
      (a, b) => a.row.max_time - b.row.max_time || (a.row.name < b.row.name ? -1 : 1),
    );
    let total = byAge.reduce((s, f) => s + f.row.disk_bytes, 0);
    for (const f of byAge) {
      const tooBig = this.opts.totalSize > 0 && total > this.opts.totalSize;
      const tooOld = this.opts.retention > 0 && f.row.max_time < now - this.opts.retention;
      if (!tooBig && !tooOld) continue;
      try {
        this.catalog.remove(f.row.name);
      } catch (err) {
        // The catalog could not be written (SQLITE_FULL): the fraction stays, in the catalog and on disk, until the
        // next pass (every minute, and after each seal).
        if (isDiskFull(err, this.opts.dir)) this.noteWriteFailure(err, 'retention');
        else
          this.log.error({ fraction: f.row.name, err: (err as Error).message }, 'retention could not drop a fraction');
        break;
      }
      this.sealed.delete(f.row.name);
      this.idFractions = null;
      f.frac.close();
      // A search thread reading it keeps its files until it ends (unpin, sweepDropped); a restart removes them (not
      // in the catalog).
      this.removeOrKeep(f.row.name);
      total -= f.row.disk_bytes;
      dropped.push(f.row.name);
      this.log.info({ fraction: f.row.name, reason: tooBig ? 'total_size' : 'retention' }, 'fraction dropped');
    }
    return dropped;
  }

  private views(from: number, to: number): FractionView[] {
    const out: FractionView[] = [];
    for (const { frac, row } of this.sealed.values()) if (row.max_time >= from && row.min_time <= to) out.push(frac);
    if (this.active.docCount > 0 && this.active.maxTime >= from && this.active.minTime <= to) out.push(this.active);
    return out;
  }

  /** Runs a query over the fractions that overlap its time range (search/execute.ts does the work). */
  /** The answer over every healthy fraction; `damaged` names the quarantined ones in the range (found now or before). */
  query(q: ShardQuery): ShardQueryResult {
    const { value } = this.readAround(() => executeQuery(this.views(q.from, q.to), q));
    const missing = this.setAsideIn(q.from, q.to);
    return missing.length ? { ...value, damaged: missing } : value;
  }

  /** The quarantined fractions (found now or before) in [from, to], as `damaged` names them. */
  private setAsideIn(from: number, to: number): string[] {
    return [
      ...new Set(
        this.setAside
          .filter((r) => r.max_time >= from && r.min_time <= to)
          .map((r) => `shard-${this.opts.shard}/${r.name}`),
      ),
    ];
  }

  /**
   * A search's step on this thread: the active fraction's part (it changes with every write, so only this thread
   * reads it), and the sealed fractions of the range, pinned, for a search thread to read without holding this
   * thread (storage/search-worker.ts; executeQuery takes the active part in its place among them). Both are taken
   * together, so the search sees the shard as it is now: every document once, whatever seals or retention do
   * next. Without a sealed fraction in the range this is the whole answer.
   *
   * The active part runs in slices of about `sliceMs` (storage/active-search.ts): when one is not enough this answers
   * { more: id }, and queryActiveMore(id) runs the next slice; the writes queued meanwhile run between them (the
   * caller queues the next slice behind them: shard-queue.ts). The part answers as of this call.
   */
  queryActive(q: ShardQuery, sliceMs = ACTIVE_SLICE_MS): ActiveAnswer {
    const names: string[] = [];
    for (const { row } of this.sealed.values())
      if (row.max_time >= q.from && row.min_time <= q.to) names.push(row.name);
    const a = this.active;
    const overlaps = a.docCount > 0 && a.maxTime >= q.from && a.minTime <= q.to;
    if (!overlaps) {
      if (names.length === 0) return { result: this.query(q) };
      return this.stepOf(q, executeQuery([], q), names, null);
    }
    // The active fraction's part runs in slices (storage/active-search.ts): the sealed fractions are pinned now,
    // with the documents the part reads, so the search covers the shard as it is now.
    const id = ++this.searchSeq;
    const pin = names.length ? this.pin(names) : 0;
    this.reading.set(a, (this.reading.get(a) ?? 0) + 1);
    this.searches.set(id, { search: new ActiveSearch(a, q), names, pin });
    return this.queryActiveMore(id, sliceMs);
  }

  /** The next slice of search `id` (begun by queryActive): its ActiveStep once done, else { more: id } again. */
  queryActiveMore(id: number, sliceMs = ACTIVE_SLICE_MS): ActiveAnswer {
    const job = this.searches.get(id);
    if (!job) throw new Error(`no search ${id} on this shard (ended, or the shard was closed)`);
    let result: ShardQueryResult;
    try {
      if (!job.search.step(Date.now() + sliceMs)) return { more: id };
      result = job.search.result();
    } catch (err) {
      this.endSearch(id);
      if (job.pin) this.unpin(job.pin);
      throw err;
    }
    this.endSearch(id);
    const frac = job.search.view;
    if (job.names.length === 0) {
      const damaged = this.setAsideIn(job.search.q.from, job.search.q.to);
      return { result: damaged.length ? { ...result, damaged } : result };
    }
    return this.stepOf(job.search.q, result, job.names, { minTime: frac.minTime, maxTime: frac.maxTime }, job.pin);
  }

  /** A search over sealed fractions `names`, its active part (with the bounds it read) `result`: its step. */
  private stepOf(
    q: ShardQuery,
    result: ShardQueryResult,
    names: string[],
    part: { minTime: number; maxTime: number } | null,
    pin = 0,
  ): ActiveStep {
    const damaged = this.setAsideIn(q.from, q.to);
    // Past the deadline already: nothing more is read, as executeQuery stops at the first fraction it cannot start.
    if (result.timedOut) {
      if (pin) this.unpin(pin);
      return { result: damaged.length ? { ...result, damaged } : result };
    }
    return {
      result,
      ...(part ? { part } : {}),
      sealed: { pin: pin || this.pin(names), names },
      ...(damaged.length ? { damaged } : {}),
    };
  }

  private pin(names: string[]): number {
    const pin = ++this.pinSeq;
    this.pins.set(pin, names);
    for (const n of names) this.pinned.set(n, (this.pinned.get(n) ?? 0) + 1);
    return pin;
  }

  /** Search `id` no longer reads its active fraction: one a seal or a rollback replaced meanwhile frees its dictionary. */
  private endSearch(id: number): void {
    const job = this.searches.get(id);
    if (!job) return;
    this.searches.delete(id);
    const frac = job.search.view.frac;
    const left = (this.reading.get(frac) ?? 1) - 1;
    if (left > 0) {
      this.reading.set(frac, left);
      return;
    }
    this.reading.delete(frac);
    if (this.retired.delete(frac)) frac.index.release();
  }

  /** An active fraction replaced (sealed, or rebuilt after a failed write): its dictionary goes once no search reads it. */
  private retire(frac: ActiveFraction): void {
    if (this.reading.has(frac)) this.retired.add(frac);
    else frac.index.release();
  }

  /** Searches whose active part is under way (begun by queryActive, not yet answered). */
  get activeSearches(): number {
    return this.searches.size;
  }

  /** The search of `pin` is over: its fractions may go (those retention dropped meanwhile go now). */
  unpin(pin: number): void {
    const names = this.pins.get(pin);
    if (!names) return;
    this.pins.delete(pin);
    for (const n of names) {
      const left = (this.pinned.get(n) ?? 1) - 1;
      if (left > 0) {
        this.pinned.set(n, left);
        continue;
      }
      this.pinned.delete(n);
      if (this.doomed.delete(n)) this.removeOrKeep(n);
    }
  }

  /** Lets search threads list the sealed fractions themselves (counted in `reads`: files they may read stay). */
  allowListedReads(reads: ListedReads): void {
    this.listedReads = reads;
  }

  /** A dropped fraction's directory goes, unless a search may read it now: then it waits in `doomed`. */
  private removeOrKeep(name: string): void {
    if (this.pinned.has(name) || this.listedReads?.mustKeep()) this.doomed.add(name);
    else rmSync(this.fracDir(name), { recursive: true, force: true });
  }

  /** The last search that listed the fractions itself ended: the dropped fractions no pin holds go now. */
  sweepDropped(): void {
    if (!this.listedReads || this.listedReads.readers() > 0) return;
    for (const n of this.doomed) {
      if (this.pinned.has(n)) continue;
      this.doomed.delete(n);
      rmSync(this.fracDir(n), { recursive: true, force: true });
    }
    this.listedReads.swept();
  }

  /**
   * Documents by id, in the order asked; absent ids are left out. `damaged` names the quarantined fractions (found
   * now or before) whose time range holds an id not found: that document may be in them, so the answer is partial.
   */
  fetch(ids: string[], pipes: FieldsPipe[] = []): { hits: ShardHit[]; damaged?: string[] } {
    const { value: hits } = this.readAround(() => fetchByIds(ids, pipes, (t) => this.views(t, t)));
    if (this.setAside.length === 0 || hits.length === ids.length) return { hits };
    const found = new Set(hits.map((h) => h.id));
    const missing = new Set<string>();
    for (const id of ids) {
      const t = found.has(id) ? null : idTime(id);
      if (t === null) continue;
      for (const r of this.setAside)
        if (r.min_time <= t && t <= r.max_time) missing.add(`shard-${this.opts.shard}/${r.name}`);
    }
    return missing.size ? { hits, damaged: [...missing] } : { hits };
  }

  /** The active fraction's size and time bounds (published to the HTTP thread, see shard-state.ts). */
  activeBounds(): { docCount: number; minTime: number; maxTime: number } {
    return { docCount: this.active.docCount, minTime: this.active.minTime, maxTime: this.active.maxTime };
  }

  /** The shard bytes of the ids this shard holds (sealed fractions and the active one), or null when a fraction
   *  sealed before they were recorded may hold any. */
  idShards(): number[] | null {
    const out = new Set(this.active.idShards());
    for (const { frac } of this.sealed.values()) {
      if (!frac.meta.idShards) return null;
      for (const b of frac.meta.idShards) out.add(b);
    }
    return [...out];
  }

  status(): ShardStatus {
    const fractions = [...this.sealed.values()].map((s) => s.row);
    fractions.push({
      name: this.active.name,
      state: 'active',
      docs: this.active.docCount,
      raw_bytes: this.active.rawBytes,
      disk_bytes: this.wal.bytes,
      min_time: this.active.docCount ? this.active.minTime : 0,
      max_time: this.active.docCount ? this.active.maxTime : 0,
    });
    return {
      shard: this.opts.shard,
      fractions,
      fields: [...this.fieldsSeen].sort(),
      open_searches: this.pins.size + (this.listedReads?.readers() ?? 0),
      problems: this.diskFull ? [...this.problems, this.diskFull] : this.problems,
    };
  }

  /** Seals the active fraction (a clean shutdown leaves nothing to replay) and closes every file. */
  close(sealActive = true): void {
    // Searches left unfinished (their callers are gone with the thread): their fractions go.
    for (const [id, job] of [...this.searches]) {
      this.endSearch(id);
      if (job.pin) this.unpin(job.pin);
    }
    if (sealActive && this.active.docCount > 0)
      try {
        this.seal();
      } catch (err) {
        // The write-ahead file stays: the next start replays it and seals later.
        this.log.error(
          { fraction: this.active.name, err: (err as Error).message },
          'seal at shutdown failed; the active fraction is replayed from its write-ahead file at the next start',
        );
      }
    this.wal.close();
    for (const s of this.sealed.values()) s.frac.close();
    this.catalog.close();
  }
}
