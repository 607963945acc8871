// Message templates of the patterns view: the variable parts of a log line become placeholders, the words stay.
import { describe, expect, it } from 'vitest';
import { messageTemplate } from '../../../src/logstore/ui-backend/patterns.js';

describe('messageTemplate', () => {
  it.each([
    [
      'server login failed: connection to 10.0.3.7:5432 refused after 12 ms',
      'server login failed: connection to <ip> refused after <num> ms',
    ],
    ['client 4711 closed: "query_wait_timeout"', 'client <num> closed: <str>'],
    ["user 'app' at [::1]:6432", 'user <str> at <ip>'],
    ['request 3f2c1a9e-8b7d-4c6e-9f01-23456789abcd took 3.5s', 'request <uuid> took <num>s'],
    ['trace 9f86d081884c7d65 done at 2026-03-02T10:00:00.123Z', 'trace <hex> done at <time>'],
    ['deadbeef cafe', 'deadbeef cafe'],
    ['pid=1234 port=-5 v2', 'pid=<num> port=<num> v<num>'],
    ['RELOAD done; changed: nothing', 'RELOAD done; changed: nothing'],
    ['quoted "10.0.0.1" stays one string', 'quoted <str> stays one string'],
  ])('%s', (msg, want) => {
    expect(messageTemplate(msg)).toBe(want);
  });

  it('gives one template to lines that differ only in their variable parts', () => {
    const lines = Array.from(
      { length: 50 },
      (_, i) => `server login failed: connection to 10.0.${i % 7}.${i}:5432 refused after ${i * 3} ms`,
    );
    expect(new Set(lines.map(messageTemplate)).size).toBe(1);
  });
});
