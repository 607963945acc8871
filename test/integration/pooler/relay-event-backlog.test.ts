// The relay's events past its shared buffer (native/relay-events.cc): with room for three events a round
// (TIDEPOOL_RELAY_EVENTS=3, the least it takes, read when this file's process makes its relay), most events wait in the relay's
// backlog, and a native login's events come in groups (kAccepted with kLoginOk or kLoginFailed, and kLent). They must
// still reach JavaScript in the order they happened: a group that did not fit must not be overtaken by a later event
// that does. Real pgbench clients, md5 and SCRAM, connecting per transaction and staying, all at once. On the
// JavaScript relay project the variable changes nothing and the same load must pass.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  client,
  loginClients,
  logins,
  nativeRelay,
  PASSWORDS,
  run,
  show,
  until,
  useNativeLoginPooler,
} from './native-login-harness.js';

process.env.TIDEPOOL_RELAY_EVENTS = '3';
const env = useNativeLoginPooler();

describe('relay events past the shared buffer', () => {
  it('with room for three events a round, concurrent per-transaction and steady clients all finish, counted, and nobody is left', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-event-backlog-'));
    const script = path.join(dir, 'select.sql');
    writeFileSync(script, 'select 1;\n');
    const xacts = async () =>
      (await show('STATS'))
        .filter((r) => r['database'] === 'app')
        .reduce((n, r) => n + Number(r['total_xact_count']), 0);
    const before = await xacts();
    const pgbench = (user: string, extra: string[]) =>
      run(
        'pgbench',
        [
          '-n',
          ...extra,
          '-c',
          '10',
          '-j',
          '2',
          '-t',
          '100',
          '-f',
          script,
          '-h',
          '127.0.0.1',
          '-p',
          String(env.tp.port),
          '-U',
          user,
          'app',
        ],
        // A client left hanging (an event lost or out of order) ends the run at the timeout, its verdict short.
        { env: { ...process.env, PGPASSWORD: PASSWORDS[user] }, timeout: 45_000 },
      ).catch((e: { stdout: string; stderr: string }) => e);
    try {
      const got = await logins(async () => {
        const verdicts = await Promise.all([
          pgbench('md5user', ['-C']),
          pgbench('scramuser', ['-C']),
          pgbench('scramuser', []),
        ]);
        for (const r of verdicts) {
          const verdict = r.stdout + r.stderr;
          expect(verdict).toContain('number of transactions actually processed: 1000/1000');
          expect(verdict).toMatch(/number of failed transactions: 0/);
          expect(verdict).not.toMatch(/\berror\b|aborted/i);
        }
      });
      // Two pgbench -C runs of 1 000 logins, and the 10 steady clients (each pgbench logs in once more first).
      expect(got.native + got.js).toBeGreaterThanOrEqual(2 * 1000 + 10);
      if (nativeRelay) expect(got.js).toBeLessThan(got.native);
      await until('every transaction counted', async () => (await xacts()) - before >= 3 * 1000);
      await until('nobody left', async () => (await loginClients()) === 0 && (await show('CLIENTS')).length === 0);
      const c = client('scramuser');
      await c.connect();
      expect((await c.query('select 41 + 1 as n')).rows).toEqual([{ n: 42 }]);
      await c.end();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
