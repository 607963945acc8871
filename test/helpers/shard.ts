// A real log-store shard in a test's directory (auto mapping, one fraction until the test seals it), and documents
// ingested into it as one bulk would (lineOffsets: JSON lines and their offsets, as the bulk parser hands them on).
import pino from 'pino';
import { autoMapping, type MappingSpec } from '../../src/logstore/mapping.js';
import { Shard } from '../../src/logstore/storage/shard.js';

export function openTestShard(dir: string, mapping: MappingSpec = autoMapping()): Shard {
  return new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
}

/** Lines concatenated, with each line's (offset, length) pair: what Shard.ingest and Store.ingest take. */
export function lineOffsets(lines: readonly Buffer[]): { docs: Buffer; offs: Int32Array } {
  const offs = new Int32Array(lines.length * 2);
  let at = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = at;
    offs[2 * i + 1] = l.length;
    at += l.length;
  });
  return { docs: Buffer.concat(lines), offs };
}

/** Each document as one JSON line (lineOffsets). */
export function jsonLines(docs: readonly unknown[]): { docs: Buffer; offs: Int32Array } {
  return lineOffsets(docs.map((d) => Buffer.from(JSON.stringify(d))));
}

/** Ingests each document as one JSON line; returns what Shard.ingest returns. */
export function ingestDocs(shard: Shard, docs: readonly unknown[]): ReturnType<Shard['ingest']> {
  const { docs: buf, offs } = jsonLines(docs);
  return shard.ingest(buf, offs);
}
