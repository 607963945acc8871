// Test helper: a pooler with its web app and an admin console session, to read the same state through SHOW, /api and /metrics.
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildWebApp } from '../../src/pooler/web/app.js';
import { ADMIN_PASSWORD, adminClient, startTestPooler, type TestPooler } from './pooler.js';

export { poolToml } from './pooler.js';

export interface OperatorHarness {
  tp: TestPooler;
  app: FastifyInstance;
  /** SHOW <what> through the admin console (text values, as a PostgreSQL client sees them). */
  show(what: string): Promise<Record<string, string | null>[]>;
  /** Runs an admin console command (PAUSE, RELOAD, ...); resolves with the rows. */
  admin(sql: string): Promise<unknown[]>;
  /** GET /api/... as Admin: status and parsed body. */
  api(path: string): Promise<{ status: number; body: unknown }>;
  metrics(): Promise<string>;
  /** A client of the pooler (not yet connected); its errors reach the test through its queries. */
  client(database: string, user: string, password: string, applicationName?: string): pg.Client;
  stop(): Promise<void>;
}

export interface OperatorToml {
  /** Lines of [general] after the harness's own. */
  general?: string;
  /** The [pools.*] sections. */
  pools: string;
}

export function operatorToml(o: OperatorToml): string {
  return `
[general]
host = "127.0.0.1"
port = 0
admin_username = "admin"
admin_password = "${ADMIN_PASSWORD}"
log_level = "warn"
${o.general ?? ''}

[web]
enabled = true
host = "127.0.0.1"
port = 0
ui = true

${o.pools}
`;
}

export async function startOperator(toml: string): Promise<OperatorHarness> {
  const tp = await startTestPooler(toml);
  let app: FastifyInstance | null = null;
  let admin: pg.Client | null = null;
  try {
    app = await buildWebApp(tp.pooler);
    admin = await adminClient(tp.port);
  } catch (err) {
    await app?.close();
    await tp.stop();
    throw err;
  }
  const a = app;
  const adminConn = admin;
  const auth = `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`;
  return {
    tp,
    app: a,
    show: async (what) => (await adminConn.query(`SHOW ${what}`)).rows as Record<string, string | null>[],
    admin: async (sql) => (await adminConn.query(sql)).rows as unknown[],
    async api(path) {
      const r = await a.inject({
        method: 'GET',
        url: path,
        headers: { authorization: auth, accept: 'application/json' },
      });
      return { status: r.statusCode, body: r.json() as unknown };
    },
    async metrics() {
      return (await a.inject({ method: 'GET', url: '/metrics' })).body;
    },
    client(database, user, password, applicationName) {
      const c = new pg.Client({
        host: '127.0.0.1',
        port: tp.port,
        database,
        user,
        password,
        ...(applicationName ? { application_name: applicationName } : {}),
      });
      // A FATAL from the pooler (query_wait_timeout, KILL) fails the query in flight; the connection's own 'error'
      // that follows would otherwise be an uncaught exception.
      c.on('error', () => undefined);
      return c;
    },
    async stop() {
      await adminConn.end().catch(() => undefined);
      await a.close();
      await tp.stop();
    },
  };
}

/** Resolves when `check` returns true; fails with `what` after `ms`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
