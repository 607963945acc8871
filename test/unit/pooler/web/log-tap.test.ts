// Log tap: ring of the hub's records, filters, activation on read and idle deactivation.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LogHub } from '../../../../src/shared/logger.js';
import { LogTap } from '../../../../src/pooler/web/log-tap.js';

function hub(): LogHub {
  return new LogHub({
    level: 'debug',
    out: new Writable({
      write(_c, _e, cb) {
        cb();
      },
    }),
  });
}
const tick = () => new Promise((r) => setImmediate(r));

describe('LogTap', () => {
  it('collects nothing until first read, then every target, in a bounded ring', async () => {
    const h = hub();
    const tap = new LogTap(h, 3);
    h.get('pooler::pool').info('before');
    await tick();
    tap.touch();
    expect(tap.active).toBe(true);
    for (let i = 0; i < 5; i++) h.get(i % 2 ? 'pooler::pool' : 'pooler::client').info({ n: i }, `m${i}`);
    await tick();
    const all = tap.read({});
    expect(all.map((e) => e.msg)).toEqual(['m2', 'm3', 'm4']);
    expect(all[0]).toMatchObject({ level: 'info', target: 'pooler::client', fields: { n: 2 } });
    expect(tap.read({ since: all[1]!.seq }).map((e) => e.msg)).toEqual(['m4']);
    tap.stop();
  });
  it('filters by minimum level, substring and limit', async () => {
    const h = hub();
    const tap = new LogTap(h, 100);
    tap.touch();
    h.get('a').debug('quiet one');
    h.get('a').warn({ pool: 'app' }, 'loud one');
    h.get('b').error('broken thing');
    await tick();
    expect(tap.read({ level: 'warn' }).map((e) => e.msg)).toEqual(['loud one', 'broken thing']);
    expect(tap.read({ q: 'APP' }).map((e) => e.msg)).toEqual(['loud one']);
    expect(tap.read({ limit: 1 }).map((e) => e.msg)).toEqual(['broken thing']);
    tap.stop();
  });
  it('deactivates after the idle time without reads', () => {
    let now = 0;
    const tap = new LogTap(hub(), 10, { idleMs: 120_000, now: () => now });
    tap.touch();
    now = 119_999;
    expect(tap.checkIdle()).toBe(true);
    now = 240_000;
    expect(tap.checkIdle()).toBe(false);
  });
  it('resize restarts the ring; 0 disables it', async () => {
    const h = hub();
    const tap = new LogTap(h, 2);
    tap.touch();
    h.get('a').info('one');
    await tick();
    tap.resize(5);
    expect(tap.active).toBe(false);
    expect(tap.capacity).toBe(5);
    tap.touch();
    for (const m of ['two', 'three', 'four']) h.get('a').info(m);
    await tick();
    expect(tap.read({}).map((e) => e.msg)).toEqual(['two', 'three', 'four']);
    tap.resize(0);
    expect(tap.capacity).toBe(0);
    tap.touch();
    expect(tap.active).toBe(false);
  });
});
