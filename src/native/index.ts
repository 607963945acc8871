// Loads the native addon when it is built and allowed (TIDEPOOL_NATIVE != 0), else the TypeScript twins.
import { createRequire } from 'node:module';
import path from 'node:path';
import { packageRoot } from '../shared/package-root.js';
import { docIndexerTs, nativeDocIndexer, type DocIndexerFactory } from './doc-indexer.js';
import { scanFramesTs } from './framing.js';
import { joinHitsTs, writeHitsTs, type JoinHits, type WriteHits } from './hit-writer.js';
import { checkedNativePostings, postingsTs, type PostingsImpl } from './postings.js';

export type ScanFrames = (buf: Uint8Array, offset: number, end: number, out: Int32Array, maxMessageSize: number) => number;

export interface NativeAddon {
  scanFrames: ScanFrames;
  [name: string]: unknown;
}

function loadAddon(): NativeAddon | null {
  if (process.env.TIDEPOOL_NATIVE === '0') return null;
  const require = createRequire(import.meta.url);
  const file = path.join(packageRoot, 'build', 'Release', 'tidepool_native.node');
  try {
    return require(file) as NativeAddon;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return null;
    throw err;
  }
}

/** The addon itself, or null when it is not built or TIDEPOOL_NATIVE=0. */
export const addon: NativeAddon | null = loadAddon();

/** True when the functions below come from C++. */
export const nativeLoaded = addon !== null;

export const scanFrames: ScanFrames = addon ? addon.scanFrames : scanFramesTs;

/** Posting-list functions (decode, intersect, union, difference, count, range): native when built, else the twins. */
export const postings: PostingsImpl = addon && typeof addon.decodePostings === 'function'
  ? checkedNativePostings(addon as unknown as PostingsImpl)
  : postingsTs;

/** The active fraction's document indexer: native when built, else the twin. */
export const docIndexer: DocIndexerFactory = addon && typeof addon.docIndexerNew === 'function'
  ? nativeDocIndexer(addon as unknown as Parameters<typeof nativeDocIndexer>[0])
  : docIndexerTs;

/** Search hits written from stored bytes, and joined into an answer: native when built, else the twins. */
export const hitWriting: { writeHits: WriteHits; joinHits: JoinHits } = addon && typeof addon.writeHits === 'function'
  ? { writeHits: addon.writeHits as WriteHits, joinHits: addon.joinHits as JoinHits }
  : { writeHits: writeHitsTs, joinHits: joinHitsTs };

/**
 * A column-wise document block (sealed fractions, format 4) decoded into [documents' bytes, where each starts]: in C++
 * when built, which answers null for what its twin (src/logstore/storage/doc-columns.ts decodeDocBlock) must decide
 * (a damaged block, a time before 1970); null when not built.
 */
export type DecodeDocBlockNative = (
  block: Uint8Array,
  times: Float64Array,
  first: number,
  /** Per keyword column a block may refer to (format 5): its token table, the table's starts, its ords by document. */
  columns?: ([Uint8Array, Uint32Array, Uint32Array] | undefined)[],
) => [Buffer, Uint32Array] | null;
export const decodeDocBlockNative: DecodeDocBlockNative | null =
  addon && typeof addon.decodeDocBlock === 'function' ? (addon.decodeDocBlock as DecodeDocBlockNative) : null;

/** The same block made in C++ from the documents one after the other (twin: encodeDocBlockTs, same bytes). */
export type EncodeDocBlockNative = (
  raw: Uint8Array,
  offsets: Uint32Array,
  times: Float64Array,
  /** Fields whose values may refer to a keyword column: key, column, token table, starts, ords of these documents. */
  refs?: [Uint8Array, number, Uint8Array, Uint32Array, Uint32Array][],
) => Buffer;
export const encodeDocBlockNative: EncodeDocBlockNative | null =
  addon && typeof addon.encodeDocBlock === 'function' ? (addon.encodeDocBlock as EncodeDocBlockNative) : null;

/**
 * One front-coded field of a decompressed dict.bin as a token table by rank, in C++ when built (twin: asciiTable in
 * src/logstore/storage/token-dict.ts, same table and starts): null when a byte of its rests is 128 or more or anything
 * does not check (the twin decides); null when not built.
 */
export type DictTokenTableNative = (
  dict: Uint8Array,
  lensAt: number,
  lensEnd: number,
  restAt: number,
  count: number,
  units: number,
) => [Buffer, Uint32Array] | null;
export const dictTokenTableNative: DictTokenTableNative | null =
  addon && typeof addon.dictTokenTable === 'function' ? (addon.dictTokenTable as DictTokenTableNative) : null;
