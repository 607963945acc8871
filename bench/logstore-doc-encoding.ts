// Sizes of a sealed fraction's files on the bench's http_logs documents, and encodings of its document blocks: rows
// (formats 1-3) and columns (formats 4 and 5; these blocks without column references) at several Brotli qualities and block sizes, their bytes against the raw
// NDJSON, and the time to encode and to decode every block (what fetch, export and context pay).
// Run: node dist/bench/logstore-doc-encoding.js [documents, default 200000] [--files: the fraction's files only]
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseMapping } from '../src/logstore/mapping.js';
import { ActiveFraction } from '../src/logstore/storage/active-fraction.js';
import { sealFraction } from '../src/logstore/storage/seal.js';
import { compress, decompress } from '../src/logstore/storage/fraction-files.js';
import { mulberry32 } from '../test/helpers/prng.js';
import { httpLogsDoc } from './http-logs.js';
import { decodeDocBlock, encodeDocBlock } from '../src/logstore/storage/doc-columns.js';
import type { DocRef } from '../src/logstore/storage/fraction-view.js';

if (process.argv.includes('--help')) {
  console.log('node dist/bench/logstore-doc-encoding.js [documents, default 200000] [--files]');
  process.exit(0);
}
const DOCS = Number(process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : 200_000);
const MAPPING =
  'mapping-list:\n  - {name: clientip, type: keyword}\n  - {name: request, type: text}\n  - {name: status, type: keyword}\n  - {name: size, type: keyword}\n  - {name: service, type: keyword}\n';

const r = mulberry32(1);
const docs: Buffer[] = [];
const times: number[] = [];
let raw = 0;
for (let i = 0; i < DOCS; i++) {
  const d = Buffer.from(httpLogsDoc(i, DOCS, r));
  docs.push(d);
  times.push(Date.parse((JSON.parse(d.toString()) as { timestamp: string }).timestamp));
  raw += d.length + 1;
}

const frac = new ActiveFraction('frac-0000000001', parseMapping(MAPPING), '00');
for (let i = 0; i < DOCS; i++)
  frac.add(JSON.parse(docs[i]!.toString()), docs[i]!, 0, docs[i]!.length, times[i]!, i + 1);
const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-docenc-'));
const t0 = process.cpuUsage();
sealFraction(frac, path.join(dir, 'f'));
const sealCpu = process.cpuUsage(t0);
let total = 0;
console.log(
  `${DOCS} documents, ${raw} raw NDJSON bytes (${(raw / DOCS).toFixed(1)} a document); seal CPU ${((sealCpu.user + sealCpu.system) / 1000).toFixed(0)} ms`,
);
console.log('| file | bytes | bytes a document | of raw |');
console.log('|---|---:|---:|---:|');
for (const f of readdirSync(path.join(dir, 'f')).sort()) {
  const b = statSync(path.join(dir, 'f', f)).size;
  total += b;
  console.log(`| ${f} | ${b} | ${(b / DOCS).toFixed(2)} | ${(b / raw).toFixed(3)}x |`);
}
console.log(`| total | ${total} | ${(total / DOCS).toFixed(2)} | ${(total / raw).toFixed(3)}x |`);
if (process.env.KEEP) console.log(dir);
else rmSync(dir, { recursive: true, force: true });

if (process.argv.includes('--files')) process.exit(0);

/** Row blocks as today: u32 count, u32 lengths, documents; `blockBytes` raw bytes each, Brotli at `q`. */
function rowBlocks(blockBytes: number, q: number) {
  const out: Buffer[] = [];
  for (let s = 0; s < DOCS;) {
    let e = s;
    let b = 0;
    while (e < DOCS && (e === s || b < blockBytes)) b += docs[e++]!.length;
    const head = Buffer.alloc(4 + 4 * (e - s));
    head.writeUInt32LE(e - s, 0);
    for (let i = s; i < e; i++) head.writeUInt32LE(docs[i]!.length, 4 + 4 * (i - s));
    out.push(compress(Buffer.concat([head, ...docs.slice(s, e)]), q));
    s = e;
  }
  return out;
}

console.log('\n| document blocks | bytes | of raw | encode ms | decode all ms | decode one block ms |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const [kb, q] of [
  [128, 1],
  [128, 5],
  [128, 9],
  [128, 11],
  [1024, 5],
  [1024, 9],
]) {
  const c0 = performance.now();
  const blocks = rowBlocks(kb! * 1024, q!);
  const c1 = performance.now();
  for (const b of blocks) decompress(b);
  const c2 = performance.now();
  const bytes = blocks.reduce((s, b) => s + b.length, 0);
  console.log(
    `| rows, ${kb} KiB, Brotli ${q} | ${bytes} | ${(bytes / raw).toFixed(3)}x | ${(c1 - c0).toFixed(0)} | ${(c2 - c1).toFixed(0)} | ${((c2 - c1) / blocks.length).toFixed(2)} |`,
  );
}

const timeArr = Float64Array.from(times);
const ref: DocRef = { buf: Buffer.alloc(0), start: 0, end: 0 };
const docOf = (i: number) => {
  ref.buf = docs[i]!;
  ref.start = 0;
  ref.end = docs[i]!.length;
  return ref;
};
for (const [kb, q] of [
  [128, 1],
  [128, 3],
  [128, 4],
  [128, 5],
  [128, 9],
  [256, 4],
  [256, 5],
  [512, 5],
  [512, 9],
  [1024, 9],
]) {
  const c0 = performance.now();
  const blocks: [Buffer, number][] = [];
  for (let s = 0; s < DOCS;) {
    let e = s;
    let b = 0;
    while (e < DOCS && (e === s || b < kb! * 1024)) b += docs[e++]!.length;
    blocks.push([compress(encodeDocBlock(docOf, timeArr, s, e), q), s]);
    s = e;
  }
  const c1 = performance.now();
  let k = 0;
  for (const [b, first] of blocks) {
    const { raw, offsets } = decodeDocBlock(decompress(b), timeArr, first);
    for (let i = 0; i + 1 < offsets.length; i++)
      if (raw.compare(docs[first + i]!, 0, docs[first + i]!.length, offsets[i], offsets[i + 1]) !== 0) k++;
  }
  const c2 = performance.now();
  if (k) throw new Error(`${k} documents differ`);
  const bytes = blocks.reduce((s, b) => s + b[0].length, 0);
  console.log(
    `| columns, ${kb} KiB, Brotli ${q} | ${bytes} | ${(bytes / raw).toFixed(3)}x | ${(c1 - c0).toFixed(0)} | ${(c2 - c1).toFixed(0)} | ${((c2 - c1) / blocks.length).toFixed(2)} |`,
  );
}
