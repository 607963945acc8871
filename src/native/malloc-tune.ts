// glibc malloc tuning for processes that hold log-store shards (native/malloc-tune.cc); no-ops without it.
import { createRequire } from 'node:module';
import path from 'node:path';
import { packageRoot } from '../shared/package-root.js';

interface MallocTune {
  setMmapThreshold(bytes: number): boolean;
  trim(): boolean;
}

/**
 * Blocks from this size on are mmapped (and unmapped when freed). Fixing it turns off glibc's raising of the
 * threshold to each freed mmapped block (up to 32 MiB), after which a shard's 1-32 MiB typed arrays stayed
 * resident in its malloc arena from one seal to the next.
 */
export const MMAP_THRESHOLD = 1 << 20;

function load(): MallocTune | null {
  if (process.env.TIDEPOOL_NATIVE === '0') return null;
  const require = createRequire(import.meta.url);
  try {
    return require(path.join(packageRoot, 'build', 'Release', 'tidepool_malloc.node')) as MallocTune;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return null;
    throw err;
  }
}

const tune = load();

/** Fixes glibc's mmap threshold for the whole process (every thread's arena); false when not applied. */
export function fixMmapThreshold(bytes = MMAP_THRESHOLD): boolean {
  return tune ? tune.setMmapThreshold(bytes) : false;
}

/** Returns free malloc pages of every arena to the kernel (after a seal's garbage is collected). */
export function trimMalloc(): boolean {
  return tune ? tune.trim() : false;
}

/** Whether the addon is loaded (glibc or not: on other C libraries both calls answer false). */
export const mallocTuneLoaded = tune !== null;
