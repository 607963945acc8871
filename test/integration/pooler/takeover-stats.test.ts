// Counters across a takeover: the new process starts from the old one's totals (SHOW STATS, /metrics), and adds what
// the old one counts while it finishes its clients, so a counter read before the takeover never reads lower after.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import pg from 'pg';
import { freePort } from '../../../src/launcher/embedded-postgres.js';
import { ADMIN_PASSWORD } from '../../helpers/pooler.js';
import { TakeoverBed, waitFor } from '../../helpers/takeover.js';

const bed = new TakeoverBed('takeover-stats');

beforeAll(() => bed.start());
afterAll(() => bed.stop());

function client(port: number, user = 'md5user', password = 'md5pass', database = 'app'): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port, user, password, database, connectionTimeoutMillis: 20_000 });
}

function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
  });
}

/** The sample of `name` with labels database="app",user="md5user", or NaN. */
function sample(text: string, name: string): number {
  const labels = `database="app",user="md5user"`;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

interface Counters {
  xacts: number;
  queries: number;
  errors: number;
  xactCount: number;
  division: number;
  showXacts: number;
  showQueries: number;
}

async function counters(port: number, webPort: number): Promise<Counters> {
  const text = await scrape(webPort);
  const admin = client(port, 'admin', ADMIN_PASSWORD, 'tidepool');
  await admin.connect();
  const stats = await admin.query('SHOW STATS');
  const errors = await admin.query('SHOW ERRORS');
  await admin.end();
  const row = stats.rows.find((r: { database: string }) => r.database === 'app') as Record<string, string>;
  return {
    xacts: sample(text, 'pooler_transactions_total'),
    queries: sample(text, 'pooler_queries_total'),
    errors: sample(text, 'pooler_errors_total'),
    xactCount: sample(text, 'pooler_transaction_duration_seconds_count'),
    division: Number(
      errors.rows.find(
        (r: Record<string, string>) => r.database === 'app' && r.user === 'md5user' && r.sqlstate === '22012',
      )?.count ?? NaN,
    ),
    showXacts: Number(row.total_xact_count),
    showQueries: Number(row.total_query_count),
  };
}

describe('counters across a takeover', () => {
  it('SHOW STATS totals and /metrics counters carry over, with what the old process counts while it drains', async () => {
    const webPort = await freePort();
    const { file, port } = await bed.writeConfig('stats', { webPort, general: 'shutdown_timeout = "10s"' });
    const first = await bed.startFirst(file);

    const idle = client(port);
    await idle.connect();
    for (let i = 0; i < 30; i++) await idle.query('select 1');
    await expect(idle.query('select 1/0')).rejects.toThrow(/division by zero/);
    const busy = client(port);
    await busy.connect();
    await busy.query('BEGIN');
    await busy.query('select 1');
    const before = await counters(port, webPort);
    expect(before.xacts).toBeGreaterThanOrEqual(31);
    expect(before.errors).toBeGreaterThanOrEqual(1);
    expect(before.division).toBe(1);
    expect(before.showXacts).toBe(before.xacts);

    const second = await bed.takeOver(file);

    // Answered by the new process now (the old one stopped accepting): nothing went down.
    const during = await counters(port, webPort);
    for (const k of Object.keys(before) as (keyof Counters)[]) expect(during[k], k).toBeGreaterThanOrEqual(before[k]);

    // The old process counts this transaction (it began there), then exits and hands its final counters over.
    await busy.query('select 2');
    await busy.query('COMMIT');
    // The idle client moved: the new process counts these.
    for (let i = 0; i < 10; i++) await idle.query('select 1');
    await waitFor('the old process to exit', () => first.child.exitCode !== null);
    expect(first.child.exitCode).toBe(0);
    expect(first.output()).not.toContain('did not take this process last counters');

    const after = await counters(port, webPort);
    // Exactly the old process's totals plus the new one's: the committed transaction and 10 selects.
    expect(after.xacts).toBe(before.xacts + 11);
    // (A moved client's first transaction on a new server may add a parameter sync query.)
    expect(after.queries).toBeGreaterThanOrEqual(before.queries + 12);
    expect(after.xactCount).toBe(before.xactCount + 11);
    expect(after.errors).toBe(before.errors);
    expect(after.division).toBe(1);
    expect(after.showXacts).toBe(after.xacts);
    expect(after.showQueries).toBe(after.queries);

    await idle.end();
    await busy.end();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
