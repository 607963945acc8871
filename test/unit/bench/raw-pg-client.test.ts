// bench/raw-pg-client.ts against a real PostgreSQL: md5 and SCRAM-SHA-256 logins, a wrong password refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawLogin } from '../../../bench/raw-pg-client.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

describe('rawLogin', () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startTestPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.cleanup();
  });

  it('logs in with md5 and with SCRAM-SHA-256, again with the SCRAM keys it derived, and runs a query', async () => {
    for (const u of [pg.users.md5, pg.users.scram, pg.users.scram]) {
      const c = await rawLogin(pg.port, u.name, u.password, 'app', pg.host);
      expect(await c.query('SELECT 1')).toBeGreaterThanOrEqual(0);
      c.end();
    }
  });

  it('rejects a wrong SCRAM password with the server error', async () => {
    await expect(rawLogin(pg.port, pg.users.scram.name, 'wrong', 'app', pg.host)).rejects.toThrow(/28P01/);
  });
});
