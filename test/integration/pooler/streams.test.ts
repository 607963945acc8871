// COPY in and out and large results through the pooler with psql; concurrent large results with a slow reader keep memory bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { createWriteStream, statSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { once } from 'node:events';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';

const run = promisify(execFile);
let db: TestPostgres;
let tp: TestPooler;

beforeAll(async () => {
  db = await startTestPostgres();
  tp = await startTestPooler(poolerToml(db));
  db.sql('CREATE TABLE big (id int, pad text)', 'app');
});

afterAll(async () => {
  await tp?.stop();
  await db?.cleanup();
});

function psqlArgs(database: string, sql: string): string[] {
  return [
    '-h',
    '127.0.0.1',
    '-p',
    String(tp.port),
    '-U',
    'md5user',
    '-d',
    database,
    '-v',
    'ON_ERROR_STOP=1',
    '-Atqc',
    sql,
  ];
}
const env = { ...process.env, PGPASSWORD: 'md5pass' };

describe('COPY and large results through the pooler (psql)', () => {
  it('copies 100 MB in and out unchanged', async () => {
    const file = path.join(tp.dir, 'in.tsv');
    const out = createWriteStream(file);
    const pad = 'x'.repeat(1000);
    let bytes = 0;
    let n = 0;
    for (let i = 0; bytes < 100 * 1024 * 1024; i++, n++) {
      const line = `${i}\t${pad}\n`;
      bytes += line.length;
      if (!out.write(line)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
    await run('psql', psqlArgs('app', `\\copy big from '${file}'`), { env });
    const rows = (
      await run('psql', psqlArgs('app', 'select count(*), sum(length(pad)) from big'), { env })
    ).stdout.trim();
    expect(rows).toBe(`${n}|${n * pad.length}`);
    const back = path.join(tp.dir, 'out.tsv');
    await run('psql', psqlArgs('app', `\\copy (select * from big order by id) to '${back}'`), { env });
    expect(statSync(back).size).toBe(statSync(file).size);
    db.sql('TRUNCATE big', 'app');
  });

  it('streams a million-row result without holding it: pooler memory stays bounded', async () => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const child = spawn('psql', psqlArgs('app', `select g, repeat('y', 200) from generate_series(1, 1000000) g`), {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let outBytes = 0;
    child.stdout.on('data', (d: Buffer) => {
      outBytes += d.length;
    });
    const [code] = await once(child, 'exit');
    clearInterval(timer);
    expect(code).toBe(0);
    expect(outBytes).toBeGreaterThan(200 * 1000 * 1000);
    // The result is over 200 MB; a pooler that buffered it would grow by at least that much.
    expect(peak - before).toBeLessThan(120 * 1024 * 1024);
  });

  it('copy failure inside a transaction leaves the connection usable', async () => {
    const file = path.join(tp.dir, 'bad.tsv');
    writeFileSync(file, '1\tok\nnot-a-number\toops\n');
    await expect(run('psql', psqlArgs('app', `\\copy big from '${file}'`), { env })).rejects.toMatchObject({
      stderr: expect.stringContaining('invalid input syntax'),
    });
    const r = await run('psql', psqlArgs('app', 'select count(*) from big'), { env });
    expect(r.stdout.trim()).toBe('0');
  });
});

describe('concurrent large results with a slow reader', () => {
  it('every row arrives intact when one client reads slowly while others stream', async () => {
    const { default: pg } = await import('pg');
    const { createHash } = await import('node:crypto');
    const mk = () =>
      new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });
    const slow = mk();
    const fast = [mk()];
    await Promise.all([slow, ...fast].map((c) => c.connect()));
    try {
      const sql = `select g, md5(g::text) as h, repeat('z', 50) as pad from generate_series(1, 100000) g`;
      const slowSock = (slow as unknown as { connection: { stream: { pause(): void; resume(): void } } }).connection
        .stream;
      const slowQuery = slow.query(sql);
      const pauser = setInterval(() => {
        slowSock.pause();
        setTimeout(() => slowSock.resume(), 30);
      }, 60);
      const results = await Promise.all([
        slowQuery,
        ...fast.map((c) => c.query(sql)),
        ...fast.map((c) => c.query(sql)),
        slow.query(sql),
      ]);
      clearInterval(pauser);
      for (const r of results) {
        expect(r.rows.length).toBe(100000);
        for (const row of r.rows) {
          if (row.h !== createHash('md5').update(String(row.g)).digest('hex'))
            throw new Error(`corrupted row ${row.g}`);
        }
      }
    } finally {
      await Promise.all([slow, ...fast].map((c) => c.end()));
    }
  });
});
