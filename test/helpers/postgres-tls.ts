// Test helper: turns on ssl in a test PostgreSQL with the given certificate, and sets its pg_hba.conf lines.
import { chownSync, copyFileSync, chmodSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeHba } from '../../src/launcher/embedded-postgres.js';
import type { TestPostgres } from './postgres.js';

/** Copies the files into the data directory (PostgreSQL runs as another user and wants its key private), sets
 * ssl = on and reloads. `hba`: lines before the helper's defaults (first match decides). */
export function enablePostgresTls(
  pg: TestPostgres,
  files: { cert: string; key: string; ca: string },
  hba: string[],
): void {
  const owner = statSync(pg.dataDir);
  for (const [from, to] of [
    [files.cert, 'server.crt'],
    [files.key, 'server.key'],
    [files.ca, 'root.crt'],
  ] as const) {
    const dest = path.join(pg.dataDir, to);
    copyFileSync(from, dest);
    chownSync(dest, owner.uid, owner.gid);
    chmodSync(dest, 0o600);
  }
  pg.sql("ALTER SYSTEM SET ssl_cert_file = 'server.crt'");
  pg.sql("ALTER SYSTEM SET ssl_key_file = 'server.key'");
  pg.sql("ALTER SYSTEM SET ssl_ca_file = 'root.crt'");
  pg.sql('ALTER SYSTEM SET ssl = on');
  writeHba(pg.dataDir, hba);
  pg.sql('SELECT pg_reload_conf()');
}
