// The batches a store remembers, shared by Bulk and Forget: answers of recent batches (a proxy's retry of one, same
// ids, is answered again, not stored twice) and batches forgotten before they arrived (refused if they do).
import type { BatchKey, BulkResponse } from './messages.js';

/** Batches remembered per store: at most this many, and at most RECENT_BYTES of their answers (24 bytes of id a
 * document: ~1.4 M documents, several seconds of a proxy's retries at full speed). */
const RECENT_BATCHES = 4096;
export const RECENT_BYTES = 32 * 1024 * 1024;

/** The key a batch is remembered by: the same for a BulkRequest and for the BatchKey a proxy names it with. */
export function batchKey(k: BatchKey): string {
  return `${k.id_shard}/${k.id_counter}/${k.offs_count}/${k.now}/${k.docs_bytes}`;
}

/** Keys of batches forgotten before they arrived (a proxy gave up on them): refused if they do, the last 4 096. */
export class RefusedBatches {
  private readonly keys = new Set<string>();

  add(key: string): void {
    this.keys.add(key);
    if (this.keys.size > RECENT_BATCHES) this.keys.delete(this.keys.values().next().value!);
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }
}

/** The answers a store remembers, oldest first, within RECENT_BATCHES and RECENT_BYTES. */
export class RecentBatches {
  private readonly entries = new Map<string, { answer: Promise<BulkResponse>; bytes: number }>();
  private bytes = 0;

  get(key: string): Promise<BulkResponse> | undefined {
    return this.entries.get(key)?.answer;
  }

  add(key: string, answer: Promise<BulkResponse>): void {
    const entry = { answer, bytes: 0 };
    this.entries.set(key, entry);
    answer.then(
      (r) => {
        if (this.entries.get(key) !== entry) return;
        entry.bytes = r.ids.length;
        this.bytes += entry.bytes;
        this.trim();
      },
      () => {
        if (this.entries.get(key) === entry) this.delete(key);
      },
    );
    this.trim();
  }

  private delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }

  private trim(): void {
    while (this.entries.size > RECENT_BATCHES || this.bytes > RECENT_BYTES)
      this.delete(this.entries.keys().next().value!);
  }
}
