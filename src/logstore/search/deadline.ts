// A search's deadline (search.timeout), checked by the loops that walk fractions, dictionaries and plans.
// Passing it stops the search where it stands; executeQuery answers what it found so far, marked timed out.

/** Thrown inside a search when its deadline has passed; caught by executeQuery, never seen outside it. */
export class SearchTimedOut extends Error {
  constructor() {
    super('the search ran past its deadline');
    this.name = 'SearchTimedOut';
  }
}

/** Calls to tick() between two readings of the clock: a dictionary token costs well under a microsecond. */
const TICKS_PER_READ = 256;

export class Deadline {
  private ticks = 0;

  /** `at`: epoch milliseconds (Date.now(): every thread of the process reads the same clock). */
  constructor(readonly at: number) {}

  /** Throws SearchTimedOut once the deadline has passed. */
  check(): void {
    if (Date.now() > this.at) throw new SearchTimedOut();
  }

  /** check() every TICKS_PER_READ calls: for inner loops, where reading the clock each time would cost more than the work. */
  tick(): void {
    if (++this.ticks >= TICKS_PER_READ) {
      this.ticks = 0;
      this.check();
    }
  }
}

/** A deadline that never passes (no search.timeout given: tests, benchmarks). */
export const NO_DEADLINE = new Deadline(Infinity);
