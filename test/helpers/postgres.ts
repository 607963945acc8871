// Test helper: a private PostgreSQL in a temporary directory with md5, scram and trust users.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startPostgres, writeHba, type RunningPostgres } from '../../src/launcher/embedded-postgres.js';

export interface TestPostgres extends RunningPostgres {
  tmp: string;
  /** Users created: md5user/md5pass (md5 secret), scramuser/scrampass (SCRAM secret), trustuser (trust). */
  users: {
    md5: { name: string; password: string };
    scram: { name: string; password: string };
    trust: { name: string };
  };
  cleanup(): Promise<void>;
}

export async function startTestPostgres(settings: Record<string, string | number> = {}): Promise<TestPostgres> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'tidepool-pg-'));
  const pg = await startPostgres({ dataDir: path.join(tmp, 'data'), settings });
  pg.sql(`SET password_encryption = 'md5'; CREATE ROLE md5user LOGIN PASSWORD 'md5pass' SUPERUSER;`);
  pg.sql(`SET password_encryption = 'scram-sha-256'; CREATE ROLE scramuser LOGIN PASSWORD 'scrampass' SUPERUSER;`);
  pg.sql('CREATE ROLE trustuser LOGIN SUPERUSER');
  pg.sql('CREATE DATABASE app OWNER md5user');
  writeHba(pg.dataDir, ['host all trustuser 127.0.0.1/32 trust', 'host all scramuser 127.0.0.1/32 scram-sha-256']);
  pg.sql('SELECT pg_reload_conf()');
  return Object.assign(pg, {
    tmp,
    users: {
      md5: { name: 'md5user', password: 'md5pass' },
      scram: { name: 'scramuser', password: 'scrampass' },
      trust: { name: 'trustuser' },
    },
    async cleanup() {
      await pg.stop();
      rmSync(tmp, { recursive: true, force: true });
    },
  });
}

/** A test PostgreSQL whose `app` database holds `items` (id 1..rows, name "item <id>"): the prepared-statement tests' table. */
export async function startItemsPostgres(rows = 20): Promise<TestPostgres> {
  const db = await startTestPostgres();
  db.sql(
    `CREATE TABLE items (id int primary key, name text); INSERT INTO items SELECT g, $$item $$ || g FROM generate_series(1, ${rows}) g`,
    'app',
  );
  return db;
}
