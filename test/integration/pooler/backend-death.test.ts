// A backend that dies mid-query (a scripted fake and a real pg_terminate_backend): the client gets an error, the pooler serves everyone else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { fakeResult, startFakeBackend, type FakeBackend } from '../../helpers/fake-backend.js';
import { startTestPooler, type TestPooler } from '../../helpers/pooler.js';

let fake: FakeBackend;
let tp: TestPooler;

beforeAll(async () => {
  fake = await startFakeBackend((sql, s) => {
    if (sql === 'select ok') {
      s.write(
        Buffer.concat([
          fakeResult.rowDescription(['v']),
          fakeResult.dataRow(['1']),
          fakeResult.commandComplete('SELECT 1'),
          fakeResult.readyForQuery(),
        ]),
      );
    } else if (sql === 'die after rows') {
      // Rows, then the process vanishes (kill -9): no ErrorResponse, no ReadyForQuery.
      s.write(Buffer.concat([fakeResult.rowDescription(['v']), fakeResult.dataRow(['1']), fakeResult.dataRow(['2'])]));
      setTimeout(() => s.destroy(), 20);
    } else if (sql === 'die mid row') {
      const row = fakeResult.dataRow(['x'.repeat(1000)]);
      s.write(Buffer.concat([fakeResult.rowDescription(['v']), row.subarray(0, 300)]));
      setTimeout(() => s.destroy(), 20);
    }
  });
  tp = await startTestPooler(`
[general]
host = "127.0.0.1"
port = 0
admin_password = "x-secret"
log_level = "error"
[pools.fake]
server_host = "127.0.0.1"
server_port = ${fake.port}
[[pools.fake.users]]
username = "u"
password = ""
pool_size = 1
`);
});

afterAll(async () => {
  await tp?.stop();
  await fake?.close();
});

function client(): pg.Client {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'u', database: 'fake' });
  c.on('error', () => undefined);
  return c;
}

describe('a backend that dies mid-query', () => {
  it('between messages: the client gets 08006 and the pool serves the next client', async () => {
    const c = client();
    await c.connect();
    await expect(c.query('die after rows')).rejects.toMatchObject({ code: '08006' });
    await c.end().catch(() => undefined);
    const d = client();
    await d.connect();
    expect((await d.query('select ok')).rows).toEqual([{ v: '1' }]);
    await d.end();
  });

  it('inside a message: the client connection is closed and the pool stays healthy', async () => {
    const c = client();
    await c.connect();
    await expect(c.query('die mid row')).rejects.toBeTruthy();
    await c.end().catch(() => undefined);
    const d = client();
    await d.connect();
    expect((await d.query('select ok')).rows).toEqual([{ v: '1' }]);
    await d.end();
    expect(tp.pooler.show('POOLS').rows[0]![7]).toBe(0); // sv_active
  });
});
