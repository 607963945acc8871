// connect_timeout, idle_timeout, server_lifetime and min_pool_size against a real PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import pg from 'pg';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let db: TestPostgres;
let blackhole: net.Server;
let blackholePort: number;
const held: net.Socket[] = [];

beforeAll(async () => {
  db = await startTestPostgres();
  // Accepts TCP connections and never answers: a server that hangs during login.
  blackhole = net.createServer((s) => held.push(s));
  await new Promise<void>((r) => blackhole.listen(0, '127.0.0.1', () => r()));
  blackholePort = (blackhole.address() as net.AddressInfo).port;
});

afterAll(async () => {
  for (const s of held) s.destroy();
  blackhole?.close();
  await db?.cleanup();
});

function toml(general: string, pools: string): string {
  return `[general]\nhost = "127.0.0.1"\nport = 0\nadmin_password = "x-secret"\nlog_level = "error"\n${general}\n${pools}`;
}

function appPool(port: number, extra = ''): string {
  return `[pools.app]\nserver_host = "127.0.0.1"\nserver_port = ${port}\n[[pools.app.users]]\nusername = "md5user"\npassword = "md5pass"\npool_size = 2\n${extra}`;
}

async function withPooler(config: string, fn: (tp: TestPooler) => Promise<void>): Promise<void> {
  const tp = await startTestPooler(config);
  try {
    await fn(tp);
  } finally {
    await tp.stop();
  }
}

function client(tp: TestPooler): pg.Client {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });
  c.on('error', () => undefined);
  return c;
}

describe('timeouts', () => {
  it('connect_timeout: a server that never answers the login gives the client an error', async () => {
    await withPooler(toml('connect_timeout = "300ms"', appPool(blackholePort)), async (tp) => {
      const c = client(tp);
      await expect(c.connect()).rejects.toMatchObject({
        code: '08006',
        message: expect.stringContaining('connect_timeout'),
      });
    });
  });

  it('idle_timeout: idle servers are closed', async () => {
    await withPooler(toml('idle_timeout = "500ms"', appPool(db.port)), async (tp) => {
      const c = client(tp);
      await c.connect();
      await c.query('select 1');
      expect(tp.pooler.show('SERVERS').rows.length).toBe(1);
      await new Promise((r) => setTimeout(r, 2500));
      expect(tp.pooler.show('SERVERS').rows.length).toBe(0);
      expect((await c.query('select 2 as two')).rows[0].two).toBe(2);
      await c.end();
    });
  });

  it('server_lifetime: old servers are replaced, with no error to clients', async () => {
    await withPooler(toml('server_lifetime = "400ms"', appPool(db.port)), async (tp) => {
      const c = client(tp);
      await c.connect();
      const first = (await c.query('select pg_backend_pid() as pid')).rows[0].pid;
      await new Promise((r) => setTimeout(r, 2000));
      const second = (await c.query('select pg_backend_pid() as pid')).rows[0].pid;
      expect(second).not.toBe(first);
      await c.end();
    });
  });

  it('min_pool_size: servers are opened ahead of clients once credentials are usable', async () => {
    await withPooler(
      toml('', appPool(db.port).replace('pool_size = 2', 'pool_size = 3\nmin_pool_size = 2')),
      async (tp) => {
        await new Promise((r) => setTimeout(r, 2500));
        expect(tp.pooler.show('SERVERS').rows.length).toBe(2);
      },
    );
  });
});
