#!/usr/bin/env node
// npm start: a private PostgreSQL (embedded package) in .tidepool/, tidepool in front of it, and how to connect.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const home = path.resolve(process.env.TIDEPOOL_HOME ?? path.join(root, '.tidepool'));
const { startPostgres, freePort } = await import(path.join(root, 'dist/src/shared/embedded-postgres.js'));

async function portOr(preferred) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(freePort()));
    s.listen(preferred, '127.0.0.1', () => s.close(() => resolve(preferred)));
  });
}

mkdirSync(home, { recursive: true });
const credFile = path.join(home, 'credentials.json');
const firstRun = !existsSync(credFile);
const cred = firstRun
  ? { appPassword: randomBytes(12).toString('base64url'), adminPassword: randomBytes(18).toString('base64url') }
  : JSON.parse(readFileSync(credFile, 'utf8'));
if (firstRun) writeFileSync(credFile, JSON.stringify(cred, null, 2), { mode: 0o600 });

process.stdout.write(`tidepool: starting PostgreSQL in ${path.join(home, 'pg')}\n`);
const pg = await startPostgres({ dataDir: path.join(home, 'pg', 'data') });
const exists = pg.sql(`select count(*) from pg_roles where rolname = 'app'`) === '1';
if (!exists) {
  pg.sql(`SET password_encryption = 'scram-sha-256'; CREATE ROLE app LOGIN PASSWORD '${cred.appPassword}'`);
  pg.sql('CREATE DATABASE app OWNER app');
}

const port = await portOr(Number(process.env.TIDEPOOL_PORT ?? 6432));
const webPort = await portOr(Number(process.env.TIDEPOOL_WEB_PORT ?? 9127));
const configFile = path.join(home, 'pooler.toml');
writeFileSync(configFile, `# Written by npm start; edit and send SIGHUP (or RELOAD) to apply.
[general]
host = "127.0.0.1"
port = ${port}
admin_username = "admin"
admin_password = "${cred.adminPassword}"
pool_mode = "transaction"

[web]
enabled = true
host = "127.0.0.1"
port = ${webPort}
ui = true

[pools.app]
server_host = "${pg.host}"
server_port = ${pg.port}

[[pools.app.users]]
username = "app"
password = "${cred.appPassword}"
pool_size = 20
`, { mode: 0o600 });

const child = spawn(process.execPath, [path.join(root, 'bin/tidepool.js'), 'pooler', '--config', configFile], { stdio: ['ignore', 'inherit', 'inherit'] });
process.stdout.write(`
tidepool is running (config: ${configFile})
  app:            PGPASSWORD='${cred.appPassword}' psql -h 127.0.0.1 -p ${port} -U app app
  admin console:  PGPASSWORD='${cred.adminPassword}' psql -h 127.0.0.1 -p ${port} -U admin tidepool -c 'SHOW POOLS'
  web console:    http://127.0.0.1:${webPort}/  (Basic: admin / the admin password above)
  metrics:        http://127.0.0.1:${webPort}/metrics
Ctrl-C stops tidepool and PostgreSQL.
`);

let stopping = false;
async function stop(signal) {
  if (stopping) return;
  stopping = true;
  if (child.exitCode === null) child.kill(signal);
  await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
  await pg.stop();
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
child.on('exit', (code) => {
  if (!stopping) {
    process.stderr.write(`tidepool exited with ${code}; stopping PostgreSQL\n`);
    void pg.stop().then(() => process.exit(code ?? 1));
  }
});
