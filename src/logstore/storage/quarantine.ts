// The quarantine/ directory of a shard: damaged fractions moved there with a note of what they held and why, so
// later runs (and the HTTP thread's reader) know which time ranges searches can no longer fully answer.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FractionRow } from './catalog.js';
import { QUARANTINE_DIR } from './wal.js';

/** Written into a quarantined fraction's directory: what it held and why it was set aside. */
const REASON_FILE = 'quarantine-reason.json';

export interface QuarantineReason {
  row: FractionRow;
  detail: string;
}

export function writeReason(dir: string, reason: QuarantineReason): void {
  writeFileSync(path.join(dir, REASON_FILE), JSON.stringify(reason));
}

/** The reason an earlier run left beside a quarantined fraction, or null (a write-ahead tail, or none readable). */
export function readReason(entry: string): QuarantineReason | null {
  try {
    const r = JSON.parse(readFileSync(path.join(entry, REASON_FILE), 'utf8')) as QuarantineReason;
    return typeof r.row?.min_time === 'number' && typeof r.row.max_time === 'number' ? r : null;
  } catch {
    return null; // not a quarantined fraction (a .tail file), or its reason was lost: reported without a range
  }
}

/** The catalog rows of the fractions in `shardDir`/quarantine/ whose note is readable. */
export function quarantinedRows(shardDir: string): FractionRow[] {
  const dir = path.join(shardDir, QUARANTINE_DIR);
  if (!existsSync(dir)) return [];
  const rows: FractionRow[] = [];
  for (const entry of readdirSync(dir)) {
    const r = readReason(path.join(dir, entry));
    if (r) rows.push(r.row);
  }
  return rows;
}
