// `tidepool start` (what `npm start` runs): the whole product on embedded defaults: a private PostgreSQL, the pooler with its web console, the log store and its UI backend (log explorer); one block of addresses; Ctrl-C stops all.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { packageRoot } from '../shared/package-root.js';
import { freePort, startPostgres, type RunningPostgres } from './embedded-postgres.js';

interface Credentials {
  appPassword: string;
  adminPassword: string;
}

/** A port number from the environment, or `preferred` when it is free, else any free port; never one of `taken` (the
 * ports chosen for the other services: a free port is free again once chosen, so it could be handed out twice). */
async function portFor(envName: string, preferred: number, taken: Set<number>): Promise<number> {
  const fromEnv = process.env[envName];
  if (fromEnv !== undefined && fromEnv !== '') return Number(fromEnv);
  let port = await new Promise<number>((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(0));
    s.listen(preferred, '127.0.0.1', () => s.close(() => resolve(preferred)));
  });
  while (port === 0 || taken.has(port)) port = await freePort();
  taken.add(port);
  return port;
}

function waitForPort(port: number, child: ChildProcess, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null || child.signalCode !== null)
        return reject(
          new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before it listened on ${port}`),
        );
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve();
      });
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline)
          reject(new Error(`${name} did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

function loadCredentials(home: string): Credentials {
  const file = path.join(home, 'credentials.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Credentials;
  const cred = {
    appPassword: randomBytes(12).toString('base64url'),
    adminPassword: randomBytes(18).toString('base64url'),
  };
  writeFileSync(file, JSON.stringify(cred, null, 2), { mode: 0o600 });
  return cred;
}

async function ensureAppRole(pg: RunningPostgres, cred: Credentials): Promise<void> {
  const [row] = await pg.query(`select count(*)::int as n from pg_roles where rolname = 'app'`);
  if (row?.['n'] === 1) return;
  await pg.query(`SET password_encryption = 'scram-sha-256'; CREATE ROLE app LOGIN PASSWORD '${cred.appPassword}'`);
  await pg.query('CREATE DATABASE app OWNER app');
}

interface Ports {
  pooler: number;
  web: number;
  logstore: number;
  logstoreGrpc: number;
  logstoreDebug: number;
  ui: number;
  uiGrpc: number;
  uiDebug: number;
}

function poolerToml(pg: RunningPostgres, cred: Credentials, ports: Ports): string {
  return `# Written by tidepool start (npm start) at every start; copy it elsewhere to keep changes. SIGHUP (or RELOAD) applies edits.
[general]
host = "127.0.0.1"
port = ${ports.pooler}
admin_username = "admin"
admin_password = "${cred.adminPassword}"
pool_mode = "transaction"

[web]
enabled = true
host = "127.0.0.1"
port = ${ports.web}
ui = true

[logs]
ship_to = "http://127.0.0.1:${ports.logstore}"
explorer_url = "http://127.0.0.1:${ports.ui}"

[pools.app]
server_host = "${pg.host}"
server_port = ${pg.port}

[[pools.app.users]]
username = "app"
password = "${cred.appPassword}"
pool_size = 20
`;
}

function logstoreYaml(home: string, ports: Ports): string {
  return `# Written by tidepool start (npm start) at every start.
server:
  http_addr: "127.0.0.1:${ports.logstore}"
  grpc_addr: "127.0.0.1:${ports.logstoreGrpc}"
  debug_addr: "127.0.0.1:${ports.logstoreDebug}"
storage:
  data_dir: ${JSON.stringify(path.join(home, 'logstore'))}
mapping:
  path: auto
`;
}

function uiYaml(home: string, ports: Ports): string {
  return `# Written by tidepool start (npm start) at every start.
server:
  http_addr: "127.0.0.1:${ports.ui}"
  grpc_addr: "127.0.0.1:${ports.uiGrpc}"
  debug_addr: "127.0.0.1:${ports.uiDebug}"
clients:
  logstore_addrs: ["127.0.0.1:${ports.logstoreGrpc}"]
saved_queries:
  path: ${JSON.stringify(path.join(home, 'logstore-ui.db'))}
links:
  console_url: "http://127.0.0.1:${ports.web}"
`;
}

/** Starts everything, prints the block, and resolves with the exit code once a signal (or a dead child) stopped it all. */
export async function runStart(): Promise<number> {
  const home = path.resolve(process.env['TIDEPOOL_HOME'] ?? path.join(packageRoot, '.tidepool'));
  mkdirSync(home, { recursive: true });
  const cred = loadCredentials(home);
  const children: { name: string; child: ChildProcess }[] = [];
  let pg: RunningPostgres | null = null;
  let stopping = false;
  let resolveDone: (code: number) => void = () => undefined;
  const done = new Promise<number>((r) => (resolveDone = r));

  let startup: Promise<void> = Promise.resolve();

  const stopAll = async (code: number, signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    // Startup stops at its next step once `stopping` is set; wait for it so that nothing it starts is left behind.
    await startup.catch(() => undefined);
    // SIGINT: the pooler exits at once and the log store closes its shards (everything it acknowledged is already on disk).
    await Promise.all(
      children.map(
        ({ child }) =>
          new Promise<void>((r) => {
            if (child.exitCode !== null || child.signalCode !== null) return r();
            child.once('exit', () => r());
            child.kill(signal);
            setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
          }),
      ),
    );
    await pg?.stop();
    resolveDone(code);
  };
  process.once('SIGINT', () => void stopAll(0, 'SIGINT'));
  process.once('SIGTERM', () => void stopAll(0, 'SIGINT'));

  const spawnService = (name: string, args: string[]) => {
    const child = spawn(process.execPath, [path.join(packageRoot, 'bin', 'tidepool.js'), ...args], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push({ name, child });
    child.once('exit', (code, signal) => {
      if (stopping) return;
      process.stderr.write(`tidepool start: ${name} exited (${code ?? signal}); stopping everything\n`);
      void stopAll(code || 1, 'SIGINT');
    });
    return child;
  };

  startup = (async () => {
    process.stdout.write(`tidepool start: PostgreSQL in ${path.join(home, 'pg')}\n`);
    pg = await startPostgres({ dataDir: path.join(home, 'pg', 'data') });
    await ensureAppRole(pg, cred);
    const taken = new Set<number>([pg.port]);
    const ports: Ports = {
      pooler: await portFor('TIDEPOOL_PORT', 6432, taken),
      web: await portFor('TIDEPOOL_WEB_PORT', 9127, taken),
      logstore: await portFor('TIDEPOOL_LOGSTORE_PORT', 9002, taken),
      logstoreGrpc: await portFor('TIDEPOOL_LOGSTORE_GRPC_PORT', 9004, taken),
      logstoreDebug: await portFor('TIDEPOOL_LOGSTORE_DEBUG_PORT', 9200, taken),
      ui: await portFor('TIDEPOOL_UI_PORT', 5555, taken),
      uiGrpc: await portFor('TIDEPOOL_UI_GRPC_PORT', 5556, taken),
      uiDebug: await portFor('TIDEPOOL_UI_DEBUG_PORT', 5557, taken),
    };
    const poolerFile = path.join(home, 'pooler.toml');
    const logstoreFile = path.join(home, 'logstore.yaml');
    writeFileSync(poolerFile, poolerToml(pg, cred, ports), { mode: 0o600 });
    writeFileSync(logstoreFile, logstoreYaml(home, ports));
    const uiFile = path.join(home, 'logstore-ui.yaml');
    writeFileSync(uiFile, uiYaml(home, ports));
    if (stopping) return;

    // The log store first, so that the pooler's first lines have somewhere to go.
    const logstore = spawnService('log store', ['logstore', '--mode', 'single', '--config', logstoreFile]);
    await waitForPort(ports.logstore, logstore, 'the log store');
    if (stopping) return;
    const pooler = spawnService('pooler', ['pooler', '--config', poolerFile]);
    await waitForPort(ports.pooler, pooler, 'the pooler');
    await waitForPort(ports.web, pooler, 'the web console');
    if (stopping) return;
    const ui = spawnService('log explorer', ['logstore-ui', '--config', uiFile]);
    await waitForPort(ports.ui, ui, 'the log explorer');
    if (stopping) return;

    const at = (port: number) => `http://127.0.0.1:${port}`;
    process.stdout.write(`
tidepool is running (files in ${home}; Ctrl-C stops everything)
  PostgreSQL       127.0.0.1:${pg.port}, superuser postgres (trust on loopback), data ${pg.dataDir}
  pooler           PGPASSWORD='${cred.appPassword}' psql -h 127.0.0.1 -p ${ports.pooler} -U app app
  admin console    PGPASSWORD='${cred.adminPassword}' psql -h 127.0.0.1 -p ${ports.pooler} -U admin tidepool -c 'SHOW POOLS'
  web console      ${at(ports.web)}/  (Basic: admin / ${cred.adminPassword})
  pooler metrics   ${at(ports.web)}/metrics
  log store        ${at(ports.logstore)}  (POST /_bulk, POST /search; the pooler's own logs go to index tidepool-pooler)
  log store debug  ${at(ports.logstoreDebug)}/metrics, /health
  log explorer     ${at(ports.ui)}/  (API ${at(ports.ui)}/api/v1, gRPC 127.0.0.1:${ports.uiGrpc}, debug ${at(ports.uiDebug)}/metrics)
  configs          ${poolerFile}, ${logstoreFile}, ${uiFile}
`);
  })();
  startup.catch((err: Error) => {
    if (stopping) return;
    process.stderr.write(`tidepool start: ${err.message}\n`);
    void stopAll(1, 'SIGINT');
  });
  return done;
}
