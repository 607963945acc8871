// Test helper: a real pooler (real PostgreSQL behind it) with its web app, in-process or on a real port.
import type { FastifyInstance } from 'fastify';
import { buildWebApp } from '../../src/pooler/web/app.js';
import { startWebListener, type WebListener } from '../../src/pooler/web/server.js';
import { appPoolToml, startTestPooler, type TestPooler } from './pooler.js';
import type { TestPostgres } from './postgres.js';

export const WEB_ADMIN = { user: 'admin', password: 'web-admin-pw' };

export interface WebTomlOptions {
  /** Lines of the [web] section after `enabled = true` and `ui = true`. */
  web?: string;
  adminPassword?: string;
  logFormat?: 'logfmt' | 'json';
}

/** A config with pool app (md5user, scramuser) and the web listener on; `[web]` lines as given. */
export function webToml(pg: TestPostgres, o: WebTomlOptions = {}): string {
  return `
[general]
host = "127.0.0.1"
port = 0
admin_username = "${WEB_ADMIN.user}"
admin_password = "${o.adminPassword ?? WEB_ADMIN.password}"
log_level = "debug"
log_format = "${o.logFormat ?? 'logfmt'}"

[web]
enabled = true
host = "127.0.0.1"
port = 0
ui = true
${o.web ?? ''}
${appPoolToml(pg)}`;
}

export const basicHeader = (user = WEB_ADMIN.user, password = WEB_ADMIN.password) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export interface WebHarness {
  tp: TestPooler;
  app: FastifyInstance;
  /** Set when started with `listen: true`. */
  listener: WebListener | null;
  base: string;
  /** Log lines written since the start (all targets). */
  lines(): string[];
  accessLines(): string[];
  stop(): Promise<void>;
}

export async function startWeb(
  pg: TestPostgres,
  o: WebTomlOptions & { listen?: boolean; staticDir?: string } = {},
): Promise<WebHarness> {
  const tp = await startTestPooler(webToml(pg, o));
  let app: FastifyInstance | null = null;
  let listener: WebListener | null = null;
  try {
    const opts = o.staticDir === undefined ? {} : { staticDir: o.staticDir };
    if (o.listen) listener = await startWebListener(tp.pooler, { ...opts, port: 0, host: '127.0.0.1' });
    else app = await buildWebApp(tp.pooler, opts);
  } catch (err) {
    await tp.stop();
    throw err;
  }
  const lines = () => tp.logText().split('\n').filter(Boolean);
  return {
    tp,
    app: app as FastifyInstance,
    listener,
    base: listener ? `http://127.0.0.1:${listener.port}` : '',
    lines,
    accessLines: () => lines().filter((l) => l.includes('pooler::web::access')),
    async stop() {
      await app?.close();
      await listener?.close();
      await tp.stop();
    },
  };
}

/** Parses `key=value key="quoted value"` into an object. */
export function parseLogfmt(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of line.matchAll(/([\w.:-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    out[m[1]!] = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
  }
  return out;
}
