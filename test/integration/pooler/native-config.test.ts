// [native] switches chosen in the config file: they select the relay and the accept path per pooler, SHOW CONFIG shows
// them, RELOAD keeps them until a restart, a bad value stops the start, and the TIDEPOOL_* variables override them.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/pooler.js';
import { nativeLoaded } from '../../../src/native/index.js';
import { poolerToml, startTestPooler, type TestPooler } from '../../helpers/pooler.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

let db: TestPostgres;
/** Whether the native relay may carry a pooler whose file leaves [native] relay on (the js-relay project turns it off
 * with TIDEPOOL_NATIVE_RELAY=0). */
const nativeRelay = nativeLoaded && process.env.TIDEPOOL_NATIVE_RELAY !== '0';

beforeAll(async () => {
  db = await startTestPostgres();
});

afterAll(async () => {
  await db?.cleanup();
});

function configRow(tp: TestPooler, key: string): readonly unknown[] | undefined {
  return tp.pooler.show('CONFIG').rows.find((r) => r[0] === key);
}

/** The relay of the one non-admin client while it runs a query, and of the pool's servers. */
async function relayKinds(tp: TestPooler): Promise<{ client: string | null; servers: string[] }> {
  const c = new pg.Client({ host: '127.0.0.1', port: tp.port, user: 'md5user', password: 'md5pass', database: 'app' });
  await c.connect();
  try {
    expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
    const sessions = [...tp.pooler.clients].filter((s) => !s.isAdmin);
    expect(sessions.length).toBe(1);
    const servers = [...tp.pooler.pools.values()].flatMap((p) => [...p.servers]).map((s) => s.end.kind);
    return { client: sessions[0]!.relayKind, servers };
  } finally {
    await c.end();
  }
}

async function withEnv<T>(name: string, value: string, fn: () => Promise<T>): Promise<T> {
  const was = process.env[name];
  process.env[name] = value;
  try {
    return await fn();
  } finally {
    if (was === undefined) delete process.env[name];
    else process.env[name] = was;
  }
}

describe('[native] in the pooler config', () => {
  it('relay = false puts this pooler on the JavaScript relay, next to a pooler on the native one', async () => {
    // The pooler on the native relay starts first: the process's native relay exists when the other one starts.
    const on = await startTestPooler(poolerToml(db));
    const off = await startTestPooler(poolerToml(db, { extra: '[native]\nrelay = false\n' }));
    try {
      expect(await relayKinds(off)).toEqual({ client: 'js', servers: ['js'] });
      expect(off.pooler.acceptsNatively).toBe(false);
      expect(configRow(off, 'native.relay')).toEqual(['native.relay', 'false', 'true', 'no']);
      const kind = nativeRelay ? 'native' : 'js';
      expect(await relayKinds(on)).toEqual({ client: kind, servers: [kind] });
      expect(on.pooler.acceptsNatively).toBe(nativeRelay);
      expect(configRow(on, 'native.relay')).toEqual(['native.relay', String(nativeRelay), 'true', 'no']);
    } finally {
      await off.stop();
      await on.stop();
    }
  });

  it("accept = false keeps net.Server's accepts on the native relay", async () => {
    const tp = await startTestPooler(poolerToml(db, { extra: '[native]\naccept = false\n' }));
    try {
      expect(tp.pooler.acceptsNatively).toBe(false);
      expect(await relayKinds(tp)).toEqual(
        nativeRelay ? { client: 'native', servers: ['native'] } : { client: 'js', servers: ['js'] },
      );
      expect(configRow(tp, 'native.accept')).toEqual(['native.accept', 'false', 'true', 'no']);
    } finally {
      await tp.stop();
    }
  });

  it('TIDEPOOL_NATIVE_ACCEPT=0 overrides accept = true, and SHOW CONFIG shows the value in force', async () => {
    const tp = await withEnv('TIDEPOOL_NATIVE_ACCEPT', '0', () =>
      startTestPooler(poolerToml(db, { extra: '[native]\naccept = true\n' })),
    );
    try {
      expect(tp.pooler.acceptsNatively).toBe(false);
      expect(configRow(tp, 'native.accept')).toEqual(['native.accept', 'false', 'true', 'no']);
    } finally {
      await tp.stop();
    }
  });

  it('RELOAD keeps [native] as it started and says a restart is needed', async () => {
    const tp = await startTestPooler(poolerToml(db, { extra: '[native]\nlend = true\n' }));
    try {
      tp.writeConfig(poolerToml(db, { extra: '[native]\nlend = false\nrelay_events = 64\n' }));
      const msg = await tp.pooler.reload();
      expect(msg).toMatch(/needs a restart to apply: native\.lend, native\.relay_events/);
      expect(
        tp.pooler.events
          .list()
          .map((e) => e.message)
          .join('\n'),
      ).toMatch(/changed: .*native\.lend, native\.relay_events/);
      expect(configRow(tp, 'native.lend')?.[1]).toBe('true');
      expect(configRow(tp, 'native.relay_events')?.[1]).toBe('2048');
    } finally {
      await tp.stop();
    }
  });

  it('SHOW CONFIG says changeable: no for every key that needs a restart, the web timeouts and tcp_defer_accept included', async () => {
    const tp = await startTestPooler(poolerToml(db));
    try {
      const changeable = (key: string) => configRow(tp, key)?.[3];
      for (const key of [
        'general.port',
        'general.tcp_defer_accept',
        'web.port',
        'web.headers_timeout',
        'web.idle_timeout',
        'native.prepared_relay',
      ])
        expect(changeable(key), key).toBe('no');
      for (const key of ['general.query_wait_timeout', 'general.log_level', 'web.ui', 'logs.ship_to'])
        expect(changeable(key), key).toBe('yes');
    } finally {
      await tp.stop();
    }
  });

  it('a bad value or a bad override stops the start with a config error naming it', async () => {
    // Also where TIDEPOOL_NATIVE_RELAY overrides the key (the js-relay project): the file is checked all the same.
    await expect(startTestPooler(poolerToml(db, { extra: '[native]\nrelay = "maybe"\n' }))).rejects.toThrow(
      /native\.relay: expected true or false, found the string "maybe"/,
    );
    const err = await withEnv('TIDEPOOL_NATIVE_LEND', 'sure', () =>
      startTestPooler(poolerToml(db)).then(
        () => null,
        (e: unknown) => e,
      ),
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /TIDEPOOL_NATIVE_LEND \(environment, overrides native\.lend\): expected 0 or 1/,
    );
  });
});
