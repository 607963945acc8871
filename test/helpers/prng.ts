// A small seeded PRNG (mulberry32) for benchmark data and randomized tests: the same seed gives the same
// sequence, so a generated data set or a failing random case can be reproduced.

/** Returns a function giving numbers in [0, 1), determined by `seed`. */
export function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
