// LogLimiter: one warn line per period, with the count of what it stands for, whatever the rate of events.
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { LogLimiter } from '../../../src/pooler/log-limiter.js';

function capture(): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      out.push(chunk.toString());
      cb();
    },
  });
  const log = pino({ level: 'info' }, stream);
  return {
    log,
    lines: () =>
      out
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('LogLimiter', () => {
  it('logs the first event at once, then one line per period with the count since the last line', () => {
    const { log, lines } = capture();
    const l = new LogLimiter(log, 'refused', 10_000);
    l.add(1, { addr: 'a' }, 1_000);
    for (let i = 0; i < 5000; i++) l.add(1, { addr: `b${i}` }, 1_000 + i);
    l.flush(5_000);
    expect(lines()).toHaveLength(1);
    l.flush(11_000);
    l.add(3, {}, 30_000);
    expect(lines().map((x) => [x['level'], x['count'], x['msg']])).toEqual([
      [40, 1, 'refused'],
      [40, 5000, 'refused'],
      [40, 3, 'refused'],
    ]);
    // The latest event's fields go with the line that counts it.
    expect(lines()[1]!['addr']).toBe('b4999');
  });

  it('says nothing without events, and ignores counts of 0', () => {
    const { log, lines } = capture();
    const l = new LogLimiter(log, 'quiet', 1_000);
    l.add(0, {}, 0);
    l.flush(10_000);
    expect(lines()).toHaveLength(0);
  });
});
