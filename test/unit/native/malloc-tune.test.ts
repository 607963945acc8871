// The malloc tuning addon of the shard threads: loaded with the build, takes a threshold in glibc's range only.
import { describe, expect, it } from 'vitest';
import { MMAP_THRESHOLD, fixMmapThreshold, mallocTuneLoaded, trimMalloc } from '../../../src/native/malloc-tune.js';

describe('malloc tuning (native/malloc-tune.cc)', () => {
  it('is built and applies on glibc: a fixed mmap threshold, and a trim that answers', () => {
    // npm ci builds it (node-gyp rebuild); this machine's C library is glibc.
    expect(mallocTuneLoaded).toBe(true);
    expect(fixMmapThreshold(MMAP_THRESHOLD)).toBe(true);
    expect(fixMmapThreshold(64 << 20)).toBe(false);
    expect(fixMmapThreshold(-1)).toBe(false);
    // true when some memory was given back, false when none was free: either way it runs, not throws.
    expect(typeof trimMalloc()).toBe('boolean');
  });
});
