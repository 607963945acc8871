// A shard thread's task queue: writes, fetches and status go ahead of waiting searches, so that searches
// queued behind one another (each up to search.timeout) never hold a write back; searches still get a turn.
import type { PiscinaTask, TaskQueue } from 'piscina';

/**
 * Tasks that wait behind the others: searches (and the next slice of one, queued behind the writes that came
 * during the last: Shard.queryActiveMore), and closing (which must come after the searches queued before it).
 */
const BACK = new Set(['query', 'queryActive', 'queryActiveMore', 'close']);

/** Front tasks taken in a row while a search waits, before one search is taken: writes cannot starve searches either. */
export const FRONT_BURST = 8;

type Named = { name?: string };

export class ShardTaskQueue implements TaskQueue {
  private readonly front: PiscinaTask[] = [];
  private readonly back: PiscinaTask[] = [];
  private burst = 0;

  get size(): number {
    return this.front.length + this.back.length;
  }

  push(task: PiscinaTask): void {
    (BACK.has((task as Named).name ?? '') ? this.back : this.front).push(task);
  }

  unshift(task: PiscinaTask): void {
    (BACK.has((task as Named).name ?? '') ? this.back : this.front).unshift(task);
  }

  shift(): PiscinaTask | null {
    if (this.front.length > 0 && (this.back.length === 0 || this.burst < FRONT_BURST)) {
      if (this.back.length > 0) this.burst++;
      return this.front.shift()!;
    }
    this.burst = 0;
    return this.back.shift() ?? null;
  }

  remove(task: PiscinaTask): void {
    for (const list of [this.front, this.back]) {
      const i = list.indexOf(task);
      if (i >= 0) {
        list.splice(i, 1);
        return;
      }
    }
  }
}
