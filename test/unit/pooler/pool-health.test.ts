// The outage state machine of a pool (pool-health.ts): when "PostgreSQL unreachable" starts and ends, and the failure rate.
import { describe, expect, it } from 'vitest';
import { PoolHealth } from '../../../src/pooler/pool-health.js';

const TIMEOUT = 3000;

describe('pool health', () => {
  it('starts an outage once connects failed for connect_timeout while clients needed a server, ends it at the next login', () => {
    const h = new PoolHealth(() => TIMEOUT);
    expect(h.connectFailed('could not connect: ECONNREFUSED', 'ECONNREFUSED', 1000, true)).toBeNull();
    expect(h.connectFailed('could not connect: ECONNREFUSED', 'ECONNREFUSED', 2000, true)).toBeNull();
    expect(h.check(3999, false)).toBeNull();
    expect(h.snapshot().unreachableSince).toBeNull();
    expect(h.check(4000, false)).toEqual({
      kind: 'unreachable',
      since: 1000,
      error: { message: 'could not connect: ECONNREFUSED', code: 'ECONNREFUSED', time: 2000 },
    });
    expect(h.snapshot().unreachableSince).toBe(1000);
    // Once only.
    expect(h.connectFailed('again', '57P03', 5000, true)).toBeNull();
    expect(h.snapshot().lastError).toEqual({ message: 'again', code: '57P03', time: 5000 });
    expect(h.connectSucceeded(9000)).toEqual({ kind: 'reachable', since: 1000, until: 9000, failures: 3 });
    expect(h.snapshot().unreachableSince).toBeNull();
    // The last error stays for the operator to read; a new run of failures starts its own clock.
    expect(h.snapshot().lastError?.message).toBe('again');
    expect(h.connectFailed('x', 'ECONNREFUSED', 10_000, true)).toBeNull();
    expect(h.check(12_999, true)).toBeNull();
    expect(h.check(13_000, true)).toMatchObject({ kind: 'unreachable', since: 10_000 });
  });

  it('is no outage while no client needed a server (min_pool_size connects alone)', () => {
    const h = new PoolHealth(() => TIMEOUT);
    h.connectFailed('refused', 'ECONNREFUSED', 1000, false);
    expect(h.check(10_000, false)).toBeNull();
    // A client comes and waits: now it is.
    expect(h.check(11_000, true)).toMatchObject({ kind: 'unreachable', since: 1000 });
  });

  it('a login that succeeds before connect_timeout ends the run: no outage, no event', () => {
    const h = new PoolHealth(() => TIMEOUT);
    h.connectFailed('refused', 'ECONNREFUSED', 1000, true);
    expect(h.connectSucceeded(2000)).toBeNull();
    expect(h.check(10_000, true)).toBeNull();
  });

  it('reads connect_timeout at each check (RELOAD may change it)', () => {
    let timeout = 10_000;
    const h = new PoolHealth(() => timeout);
    h.connectFailed('refused', 'ECONNREFUSED', 1000, true);
    expect(h.check(4000, true)).toBeNull();
    timeout = 2000;
    expect(h.check(4000, true)).toMatchObject({ kind: 'unreachable' });
  });

  it('connect failures per second over the last stats period, unrounded', () => {
    const h = new PoolHealth(() => TIMEOUT);
    for (let i = 0; i < 3; i++) h.connectFailed('refused', 'ECONNREFUSED', 1000 + i, true);
    expect(h.snapshot().connectFailuresPerSec).toBe(0);
    h.roll(10_000);
    expect(h.snapshot()).toMatchObject({ connectFailures: 3, connectFailuresPerSec: 0.3 });
    h.roll(10_000);
    expect(h.snapshot().connectFailuresPerSec).toBe(0);
  });
});
