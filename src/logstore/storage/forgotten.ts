// Ids of documents this store holds but must not count: a proxy sent their batch here, a replica of this shard
// failed, and the batch was stored by another shard (the same ids); the copy left here is forgotten (Forget in
// store.proto), so totals, histograms and aggregations across the cluster count each document once. Kept in
// `data_dir/forgotten.ids`, one id a line, fsynced before the proxy is answered; read back at start.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';

import { idTime } from '../doc-time.js';

const ID = /^[0-9a-f]{24}$/;

export class ForgottenIds {
  private readonly ids = new Set<string>();
  /** The ids with their times, by time; rebuilt after an add. */
  private byTime: { time: number; id: string }[] = [];
  /** Appends run one after another. */
  private tail: Promise<unknown> = Promise.resolve();
  /** The file ends in a line cut short (a crash mid-append): the next append starts a line of its own. */
  private torn = false;

  constructor(private readonly file: string) {
    if (!existsSync(file)) return;
    const text = readFileSync(file, 'latin1');
    // A line cut short is not an id: left out (that forget was not answered, so the proxy sends it again).
    for (const line of text.split('\n')) if (ID.test(line)) this.ids.add(line);
    this.torn = text.length > 0 && !text.endsWith('\n');
    this.sort();
  }

  get size(): number {
    return this.ids.size;
  }

  private sort(): void {
    this.byTime = [...this.ids].map((id) => ({ time: idTime(id)!, id })).sort((a, b) => a.time - b.time);
  }

  /** Forgets `ids` (24 lowercase hex digits each; anything else is refused): resolves once they are on disk. */
  add(ids: readonly string[]): Promise<number> {
    for (const id of ids)
      if (!ID.test(id))
        throw new RangeError(`not a document id (24 lowercase hex digits): ${JSON.stringify(id.slice(0, 40))}`);
    const fresh = [...new Set(ids)].filter((id) => !this.ids.has(id));
    if (fresh.length === 0) return Promise.resolve(0);
    const run = this.tail.then(async () => {
      mkdirSync(path.dirname(this.file), { recursive: true });
      const fh = await open(this.file, 'a');
      try {
        await fh.write((this.torn ? '\n' : '') + fresh.join('\n') + '\n');
        this.torn = false;
        await fh.sync();
      } finally {
        await fh.close();
      }
      // Searches leave them out only once they are durable: the proxy is answered after this.
      for (const id of fresh) this.ids.add(id);
      this.sort();
      return fresh.length;
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** The forgotten ids whose document time is in [from, to], or null when there are none. */
  within(from: number, to: number): string[] | null {
    const all = this.byTime;
    if (all.length === 0) return null;
    let lo = 0;
    let hi = all.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (all[mid]!.time < from) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < all.length && all[i]!.time <= to; i++) out.push(all[i]!.id);
    return out.length ? out : null;
  }
}
