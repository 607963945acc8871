// The events ring: newest first, bounded, and login failures rate-limited with a count of those not recorded.
import { describe, expect, it } from 'vitest';
import { EventRing } from '../../../src/pooler/events.js';

describe('event ring', () => {
  it('lists newest first and keeps the last `size` events', () => {
    const r = new EventRing(3);
    for (let i = 1; i <= 5; i++) r.add('pause', 'db/u', `e${i}`, i);
    expect(r.list().map((e) => e.message)).toEqual(['e5', 'e4', 'e3']);
    expect(r.list()[0]).toEqual({ time: 5, kind: 'pause', pool: 'db/u', message: 'e5' });
  });

  it('records at most five login failures per 10 s and then says how many it left out', () => {
    const r = new EventRing();
    for (let i = 0; i < 12; i++) r.loginFailure(`failure ${i}`, 1000 + i);
    expect(r.list().map((e) => e.message)).toEqual(['failure 4', 'failure 3', 'failure 2', 'failure 1', 'failure 0']);
    r.loginFailure('later', 12_000);
    const [latest, summary] = r.list();
    expect(latest!.message).toBe('later');
    expect(summary!.message).toMatch(/^7 more login failures/);
    expect(summary!.kind).toBe('login_failure');
  });
});
