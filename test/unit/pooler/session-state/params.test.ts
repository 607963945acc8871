// Session parameters: the SET / RESET parser, the relay's statement scan, startup options, sync and read-back.
import { describe, expect, it } from 'vitest';
import { addParamEffects, emptyEffects } from '../../../../src/pooler/session-state/set-statements.js';
import { paramStatement, paramWords } from '../../../../src/pooler/session-state/param-scan.js';
import {
  applyReadBack,
  ClientParams,
  dataRows,
  optionParams,
  ParamValues,
  readBackQuery,
  syncQuery,
  trackedParams,
} from '../../../../src/pooler/session-state/params.js';
import { parsePoolerConfig } from '../../../../src/config/pooler.js';
import { writeQuery } from '../../../../src/protocol/writer.js';
import { writeParse } from '../../../../src/protocol/extended.js';

function effects(text: string) {
  const e = emptyEffects();
  addParamEffects(text, e);
  return { names: [...e.names].sort(), resets: [...e.resets].sort(), resetAll: e.resetAll };
}

describe('SET / RESET statements', () => {
  it('names what session-level statements set or reset, and skips SET LOCAL, TRANSACTION, CONSTRAINTS', () => {
    expect(effects("SET search_path = a, public; set TIME ZONE 'UTC'; SET SESSION myapp.tenant TO 'x'")).toEqual({
      names: ['myapp.tenant', 'search_path', 'timezone'],
      resets: [],
      resetAll: false,
    });
    expect(
      effects('SET LOCAL search_path = a; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; SET CONSTRAINTS ALL DEFERRED'),
    ).toEqual({ names: [], resets: [], resetAll: false });
    expect(effects('RESET search_path; SET DateStyle TO DEFAULT; RESET "MyApp".Tenant')).toEqual({
      names: ['datestyle', 'myapp.tenant', 'search_path'],
      resets: ['datestyle', 'myapp.tenant', 'search_path'],
      resetAll: false,
    });
    expect(effects('SET search_path = x; RESET search_path; SET search_path = y')).toEqual({
      names: ['search_path'],
      resets: [],
      resetAll: false,
    });
    expect(effects('RESET ALL')).toMatchObject({ resetAll: true });
    expect(effects('discard all')).toMatchObject({ resetAll: true });
    expect(effects('DISCARD PLANS')).toMatchObject({ resetAll: false, names: [] });
    expect(effects("SET SCHEMA 'x'; SET NAMES 'UTF8'; SET ROLE other")).toMatchObject({
      names: ['client_encoding', 'role', 'search_path'],
    });
    expect(effects("SELECT set_config('MyApp.Tenant', 'x', false)")).toMatchObject({ names: ['myapp.tenant'] });
  });

  it('is not fooled by semicolons and keywords inside literals, quoted names and comments', () => {
    expect(effects("SELECT 'a; SET x.y = 1'; /* SET a.b = 1; */ -- SET c.d = 1\nSET e.f = $$;$$")).toEqual({
      names: ['e.f'],
      resets: [],
      resetAll: false,
    });
    expect(effects("SELECT E'\\'; SET g.h = 1'")).toEqual({ names: [], resets: [], resetAll: false });
  });
});

describe('the relay scan (TypeScript twin of native ParamStatement)', () => {
  const text = { value: '' };
  const tail = { left: 0 };
  const scan = (m: Buffer, complete = true) => paramStatement(m[0]!, m, 0, m.readUInt32BE(1), complete, text, tail);

  it('flags Query and Parse texts with a statement starting SET, RESET, DISCARD, or calling set_config', () => {
    expect(scan(writeQuery('SELECT 1'))).toBe(0);
    expect(scan(writeQuery('select settings from t'))).toBe(0);
    expect(scan(writeQuery('  set search_path = x'))).toBe(1);
    expect(text.value).toBe('  set search_path = x');
    expect(scan(writeQuery('SELECT 1; RESET ALL'))).toBe(1);
    expect(scan(writeQuery("SELECT SET_CONFIG('a.b', '1', false)"))).toBe(1);
    expect(scan(writeQuery('DISCARD ALL'))).toBe(1);
    expect(scan(writeQuery('SETTLE'))).toBe(0);
    expect(scan(writeParse('s1', Buffer.from('SET TimeZone = $1'), Buffer.alloc(2)))).toBe(1);
    expect(text.value).toBe('SET TimeZone = $1');
    expect(scan(writeParse('', Buffer.from('SELECT 1'), Buffer.alloc(2)))).toBe(0);
  });

  it('a message cut by the read: what is here decides, and the rest is scanned as it comes', () => {
    const q = writeQuery('SELECT 1; SET search_path = x');
    expect(paramStatement(q[0]!, q.subarray(0, 20), 0, q.readUInt32BE(1), false, text, tail)).toBe(2);
    tail.left = 0;
    expect(paramStatement(q[0]!, q.subarray(0, 12), 0, q.readUInt32BE(1), false, text, tail)).toBe(0);
    expect(tail.left).toBe(q.length - 12);
    expect(paramWords(q.subarray(12), 0, tail.left, false)).toBe(true);
    const plain = writeQuery('SELECT abalance FROM pgbench_accounts WHERE aid = 1');
    expect(paramWords(plain, 5, plain.length - 1, true)).toBe(false);
  });
});

describe('parameter values', () => {
  it('reads -c and -- options of a startup packet', () => {
    expect([...optionParams('-c search_path=a,b --statement-timeout=5s -cDateStyle=ISO\\ DMY')]).toEqual([
      ['search_path', 'a,b'],
      ['statement_timeout', '5s'],
      ['datestyle', 'ISO DMY'],
    ]);
  });

  it("starts a client from the pool's reported values and its own startup values, and greets it with them", () => {
    const reported = new Map([
      ['TimeZone', 'UTC'],
      ['application_name', 'tidepool'],
      ['server_version', '15'],
    ]);
    const c = new ClientParams(
      reported,
      new Map([
        ['user', 'u'],
        ['TimeZone', 'Asia/Tokyo'],
        ['options', '-c myapp.tenant=t'],
      ]),
      trackedParams('IntervalStyle'),
    );
    expect(Object.fromEntries(c.values.values)).toEqual({
      client_encoding: 'UTF8',
      timezone: 'Asia/Tokyo',
      application_name: 'tidepool',
      'myapp.tenant': 't',
    });
    expect(c.greeting(reported)?.get('TimeZone')).toBe('Asia/Tokyo');
  });

  it("a native login's parameters equal those worked out from its startup packet, and no client's SET reaches the next", () => {
    const reported = new Map([
      ['client_encoding', 'UTF8'],
      ['DateStyle', 'ISO, MDY'],
      ['TimeZone', 'UTC'],
      ['application_name', ''],
      ['server_version', '17.0'],
    ]);
    const tracked = trackedParams('IntervalStyle');
    for (const [app, encoding] of [
      ['', undefined],
      ['billing', undefined],
      ['billing', 'UTF8'],
      ['', 'UTF8'],
    ] as const) {
      const startup = new Map([
        ['user', 'u'],
        ['database', 'd'],
        ['application_name', app],
      ]);
      if (encoding !== undefined) startup.set('client_encoding', encoding);
      const want = new ClientParams(reported, startup, tracked);
      for (let n = 0; n < 2; n++) {
        const got = ClientParams.ofNativeLogin(reported, tracked, 'u', 'd', app, encoding);
        expect(Object.fromEntries(got.values.values)).toEqual(Object.fromEntries(want.values.values));
        expect(Object.fromEntries(got.startup)).toEqual(Object.fromEntries(want.startup));
        expect(got.values.key).toBe(want.values.key);
        // What one client SETs stays its own (the next login's copy is checked against `want` above).
        got.values.set('search_path', `mine_${n}`);
      }
    }
  });

  it('copies share one map until either side changes', () => {
    const a = new ParamValues();
    a.set('search_path', 'one');
    const b = new ParamValues();
    b.copyFrom(a);
    const c = new ParamValues();
    c.copyFrom(b);
    expect(b.key).toBe(a.key);
    b.set('search_path', 'two');
    expect(a.values.get('search_path')).toBe('one');
    expect(c.values.get('search_path')).toBe('one');
    a.set('datestyle', 'ISO');
    expect([...c.values.keys()]).toEqual(['search_path']);
    expect(c.key).not.toBe(a.key);
    c.clear();
    expect(a.values.get('search_path')).toBe('one');
    expect(b.values.get('search_path')).toBe('two');
  });

  it('syncs only what differs, with one set_config statement (NULL resets)', () => {
    const a = new ParamValues();
    const b = new ParamValues();
    expect(syncQuery(a, b)).toBeNull();
    a.set('search_path', "it's");
    b.set('myapp.tenant', 'x');
    b.set('timezone', 'UTC');
    a.set('timezone', 'UTC');
    expect(syncQuery(a, b)).toBe(
      "SELECT pg_catalog.set_config(E'search_path', E'it''s', false), pg_catalog.set_config(E'myapp.tenant', NULL, false)",
    );
    b.copyFrom(a);
    expect(syncQuery(a, b)).toBeNull();
    expect(a.key).toBe(b.key);
  });

  it('applies a read-back: defaults drop out, reported names stay, a RESET returns to the startup value', () => {
    const reported = new Map([['application_name', 'tidepool']]);
    const c = new ClientParams(reported, new Map([['application_name', 'psql']]), trackedParams(''));
    const server = new ParamValues();
    const rows = [
      ['search_path', '"$user", public', '"$user", public'],
      ['application_name', 'tidepool', 'tidepool'],
      ['myapp.tenant', 'x', null],
    ];
    const e = emptyEffects();
    addParamEffects("RESET ALL; SET myapp.tenant = 'x'", e);
    applyReadBack(
      rows,
      ['search_path', 'application_name', 'myapp.tenant'],
      e,
      new Set(['application_name']),
      server,
      c,
    );
    expect(Object.fromEntries(server.values)).toEqual({ application_name: 'tidepool', 'myapp.tenant': 'x' });
    expect(Object.fromEntries(c.values.values)).toEqual({
      client_encoding: 'UTF8',
      application_name: 'psql',
      'myapp.tenant': 'x',
    });
    expect(readBackQuery(['a.b'])).toContain("ARRAY[E'a.b']");
  });

  it('parses DataRows of a captured reply', () => {
    const row = Buffer.concat([
      Buffer.from([0x44, 0, 0, 0, 17, 0, 2, 0, 0, 0, 3]),
      Buffer.from('abc'),
      Buffer.from([0xff, 0xff, 0xff, 0xff]),
    ]);
    expect(dataRows(Buffer.concat([row, Buffer.from([0x5a, 0, 0, 0, 5, 0x49])]))).toEqual([['abc', null]]);
  });
});

describe('track_extra_parameters', () => {
  it('defaults to IntervalStyle and refuses what is not a list of parameter names', () => {
    const ok = parsePoolerConfig('[general]\n');
    expect(ok.problems).toEqual([]);
    expect(ok.config.general.track_extra_parameters).toBe('IntervalStyle');
    expect(trackedParams(ok.config.general.track_extra_parameters)).toContain('intervalstyle');
    expect(trackedParams('myapp.tenant, work_mem')).toEqual(
      expect.arrayContaining(['myapp.tenant', 'work_mem', 'search_path']),
    );
    const bad = parsePoolerConfig('[general]\ntrack_extra_parameters = "IntervalStyle, bad name;"\n');
    expect(bad.problems.map((p) => p.path)).toEqual(['general.track_extra_parameters']);
  });
});
