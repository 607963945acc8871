// A real log-store shard in a test's directory (auto mapping, one fraction until the test seals it), and documents
// ingested into it as one bulk would.
import pino from 'pino';
import { autoMapping, type MappingSpec } from '../../src/logstore/mapping.js';
import { Shard } from '../../src/logstore/storage/shard.js';

export function openTestShard(dir: string, mapping: MappingSpec = autoMapping()): Shard {
  return new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
}

/** Ingests each document as one JSON line; returns what Shard.ingest returns. */
export function ingestDocs(shard: Shard, docs: readonly unknown[]): ReturnType<Shard['ingest']> {
  const lines = docs.map((d) => Buffer.from(JSON.stringify(d)));
  const offs = new Int32Array(lines.length * 2);
  let p = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = p;
    offs[2 * i + 1] = l.length;
    p += l.length;
  });
  return shard.ingest(Buffer.concat(lines), offs);
}
