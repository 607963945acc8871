// Every seq-ql construct against documents whose expected matches the test computes itself,
// on the in-memory active fraction and again after sealing (files + native posting lists).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autoMapping, parseMapping } from '../../../src/logstore/mapping.js';
import { QuerySyntaxError, parseQuery } from '../../../src/logstore/query/parser.js';
import { QueryFieldError, planQuery } from '../../../src/logstore/query/plan.js';
import { Shard } from '../../../src/logstore/storage/shard.js';
import { unpackHits } from '../../../src/logstore/search/packed-hits.js';

const mapping = parseMapping(`
mapping-list:
  - name: level
    type: keyword
  - name: service
    type: keyword
  - name: status
    type: keyword
  - name: msg
    type: text
  - name: path
    type: path
  - name: user
    type: keyword
  - name: tags
    type: keyword
  - name: trace
    type: exists
  - name: k8s
    type: object
    mapping-list:
      - name: pod
        type: keyword
`);

interface Doc {
  n: number;
  level: string;
  service: string;
  status: number;
  msg: string;
  path: string;
  user?: string;
  tags: string[];
  trace?: string;
  k8s: { pod: string };
  secret: string;
  timestamp: string;
}

const LEVELS = ['info', 'warn', 'error', 'ERROR'];
const SERVICES = ['api-gw', 'web', 'auth', 'we*b', 'billing'];
const WORDS = ['connection', 'timeout', 'refused', 'user', 'login', 'ok', 'Timeouts', 'retry'];
const PATHS = ['/api/v1/users', '/api/v1/orders', '/api/v2/users', '/static/app.js', '/'];
const USERS = [undefined, 'alice', 'bob', 'x:y', 'q"uote'];

const base = Date.parse('2026-03-01T00:00:00Z');
const docs: Doc[] = Array.from({ length: 400 }, (_, n) => {
  const d: Doc = {
    n,
    level: LEVELS[n % 4]!,
    service: SERVICES[(n * 7) % 5]!,
    status: [200, 201, 301, 400, 404, 499, 500, 503][(n * 3) % 8]!,
    msg: `${WORDS[n % 8]} ${WORDS[(n * 5) % 8]} id=${n}`,
    path: PATHS[(n * 11) % 5]!,
    tags: n % 3 ? ['a', `t${n % 5}`] : [],
    k8s: { pod: `pod-${n % 6}` },
    secret: `s${n}`,
    timestamp: new Date(base + n * 60_000).toISOString(),
  };
  const u = USERS[n % 5];
  if (u !== undefined) d.user = u;
  if (n % 4 === 1) d.trace = `tr${n}`;
  return d;
});

const words = (s: string) =>
  s
    .toLowerCase()
    .split(/[^\p{L}\p{N}_]+/u)
    .filter(Boolean);
const num = (s: number) => s;

const cases: [string, (d: Doc) => boolean][] = [
  ['level:error', (d) => d.level.toLowerCase() === 'error'],
  ['level:ERROR', (d) => d.level.toLowerCase() === 'error'],
  ['service:"api-gw"', (d) => d.service === 'api-gw'],
  ["service:'web'", (d) => d.service === 'web'],
  ['service:api*', (d) => d.service.startsWith('api')],
  ['service:*b', (d) => d.service.endsWith('b')],
  ['service:b*g', (d) => /^b.*g$/.test(d.service)],
  ['service:*', () => true],
  ['service:`we*b`', (d) => d.service === 'we*b'],
  ['service:"we\\*b"', (d) => d.service === 'we*b'],
  ['user:`x:y`', (d) => d.user === 'x:y'],
  ['user:"q\\"uote"', (d) => d.user === 'q"uote'],
  ['msg:timeout', (d) => words(d.msg).includes('timeout')],
  ['msg:"connection timeout"', (d) => words(d.msg).includes('connection') && words(d.msg).includes('timeout')],
  ['msg:time*', (d) => words(d.msg).some((w) => w.startsWith('time'))],
  ['msg:TIMEOUTS', (d) => words(d.msg).includes('timeouts')],
  ['path:/api/v1', (d) => d.path.startsWith('/api/v1/')],
  ['path:/api/v1/users', (d) => d.path === '/api/v1/users'],
  ['path:/api', (d) => d.path.startsWith('/api/')],
  ['k8s.pod:pod-1', (d) => d.k8s.pod === 'pod-1'],
  ['tags:t1', (d) => d.tags.includes('t1')],
  ['level:error and service:api-gw', (d) => d.level.toLowerCase() === 'error' && d.service === 'api-gw'],
  [
    'level:error or level:warn and service:web',
    (d) => d.level.toLowerCase() === 'error' || (d.level === 'warn' && d.service === 'web'),
  ],
  [
    '(level:error or level:warn) and service:web',
    (d) => (d.level.toLowerCase() === 'error' || d.level === 'warn') && d.service === 'web',
  ],
  ['not level:info', (d) => d.level !== 'info'],
  ['NOT level:info AND NOT service:web', (d) => d.level !== 'info' && d.service !== 'web'],
  [
    'not (level:info or level:warn) or status:200',
    (d) => !(d.level === 'info' || d.level === 'warn') || d.status === 200,
  ],
  ['status:[400, 499]', (d) => num(d.status) >= 400 && d.status <= 499],
  ['status:(400, 500]', (d) => d.status > 400 && d.status <= 500],
  ['status:[500 to *]', (d) => d.status >= 500],
  ['status:[*, 300)', (d) => d.status < 300],
  ['service:[a, b]', (d) => d.service >= 'a' && d.service <= 'b'],
  ['service:(auth, web)', (d) => d.service > 'auth' && d.service < 'web'],
  ['status:in(500, 503, 404)', (d) => [500, 503, 404].includes(d.status)],
  ["service:in(web, 'api*')", (d) => d.service === 'web' || d.service.startsWith('api')],
  ['_exists_:user', (d) => d.user !== undefined],
  ['_exists_:trace', (d) => d.trace !== undefined],
  ['not _exists_:user and level:warn', (d) => d.user === undefined && d.level === 'warn'],
  ['*', () => true],
  ['', () => true],
  ['level:error # only errors\n and status:500', (d) => d.level.toLowerCase() === 'error' && d.status === 500],
  ['* | fields level, n', () => true],
  // Free text: words of text fields (msg), values of keyword and path fields that contain it.
  [
    'timeout',
    (d) =>
      words(d.msg).includes('timeout') ||
      [d.level, d.service, d.user ?? '', d.k8s.pod, d.path, ...d.tags].some((v) => v.toLowerCase().includes('timeout')),
  ],
  ['"connection timeout"', (d) => words(d.msg).includes('connection') && words(d.msg).includes('timeout')],
  ['API', (d) => d.service.includes('api') || d.path.includes('api')],
  ["'pod-3'", (d) => d.k8s.pod === 'pod-3'],
  ['`we*b`', (d) => d.service === 'we*b'],
  ['time*', (d) => words(d.msg).some((w) => w.startsWith('time'))],
  [
    'ERROR and not api',
    (d) => d.level.toLowerCase() === 'error' && !d.service.includes('api') && !d.path.includes('api'),
  ],
  ['users or orders', (d) => d.path.includes('users') || d.path.includes('orders')],
];

let dir: string;
let shard: Shard;

function run(q: string, from = -Infinity, to = Infinity): number[] {
  const plan = planQuery(parseQuery(q), mapping);
  const r = shard.query({ plan, from, to, limit: 10_000, order: 'asc' });
  return unpackHits(r.hits).map((h) => (JSON.parse(h.json) as { data: Doc }).data.n);
}

function expected(pred: (d: Doc) => boolean, from = -Infinity, to = Infinity): number[] {
  return docs
    .filter((d) => pred(d) && Date.parse(d.timestamp) >= from && Date.parse(d.timestamp) <= to)
    .map((d) => d.n);
}

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-ql-'));
  shard = new Shard(
    { dir, shard: 0, mapping, fracSize: 1 << 30, totalSize: 0, retention: 0 },
    pino({ level: 'silent' }),
  );
  // Shuffled so that insertion order differs from time order.
  const order = docs.map((d) => d.n).sort((a, b) => ((a * 7919) % 400) - ((b * 7919) % 400));
  const lines = order.map((n) => Buffer.from(JSON.stringify(docs[n])));
  const buf = Buffer.concat(lines);
  const offs = new Int32Array(lines.length * 2);
  let p = 0;
  lines.forEach((l, i) => {
    offs[2 * i] = p;
    offs[2 * i + 1] = l.length;
    p += l.length;
  });
  expect(shard.ingest(buf, offs).errors).toEqual([]);
});

afterAll(() => {
  shard?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.each(['active', 'sealed'])('seq-ql on the %s fraction', (state) => {
  beforeAll(() => {
    if (state === 'sealed') shard.seal();
  });

  it.each(cases)('%s', (q, pred) => {
    expect(run(q)).toEqual(expected(pred));
  });

  it('restricts to [from, to]', () => {
    const from = base + 100 * 60_000;
    const to = base + 199 * 60_000;
    expect(run('level:warn', from, to)).toEqual(expected((d) => d.level === 'warn', from, to));
    expect(run('*', from, to)).toHaveLength(100);
  });

  it('returns the newest first, limited', () => {
    const plan = planQuery(parseQuery('level:warn or service:web'), mapping);
    const r = shard.query({ plan, from: -Infinity, to: Infinity, limit: 7, order: 'desc' });
    const want = expected((d) => d.level === 'warn' || d.service === 'web');
    expect(r.total).toBe(want.length);
    expect(unpackHits(r.hits).map((h) => (JSON.parse(h.json) as { data: Doc }).data.n)).toEqual(
      want.reverse().slice(0, 7),
    );
  });
});

describe('seq-ql errors', () => {
  it.each([
    ['level:', 6, 'a value after ":"'],
    ['level:error and', 15, 'a term'],
    ['(level:error', 12, '")"'],
    ['status:[1, 2', 12, '"]" or ")"'],
    ['status:[1 2]', 10, '"," or "to"'],
    ['level:"open', 6, 'a closing "'],
    ['level:error | sort x', 14, 'a pipe'],
    ['level error', 6, '"and", "or", "|"'],
    ['"open', 0, 'a closing "'],
    ['service:in(a, b', 15, '"," or ")"'],
  ])('%s -> position %i', (q, pos, what) => {
    try {
      parseQuery(q);
      expect.unreachable('no error');
    } catch (err) {
      expect(err).toBeInstanceOf(QuerySyntaxError);
      expect((err as QuerySyntaxError).position).toBe(pos);
      expect((err as Error).message).toContain(what);
      expect((err as Error).message).toContain(`position ${pos}`);
    }
  });

  it('a field that is not indexed is an error naming it and its position', () => {
    try {
      planQuery(parseQuery('level:error and secret:s1'), mapping);
      expect.unreachable('no error');
    } catch (err) {
      expect(err).toBeInstanceOf(QueryFieldError);
      expect((err as QueryFieldError).position).toBe(16);
      expect((err as Error).message).toMatch(/"secret" is not indexed/);
    }
  });
});

describe('free text in auto mode (every field a keyword)', () => {
  it('matches any field whose value contains the word or phrase, _exists_ excepted, active and sealed', () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'tidepool-free-'));
    const m = autoMapping();
    const s = new Shard(
      { dir: d, shard: 0, mapping: m, fracSize: 1 << 30, totalSize: 0, retention: 0 },
      pino({ level: 'silent' }),
    );
    try {
      const docs = [
        { target: 'pooler::admin', msg: 'RELOAD failed, the old configuration stays' },
        { target: 'pooler', msg: 'pooler listening', port: 6432 },
        { target: 'pooler::pool', msg: 'server login failed', err: 'password authentication failed for user "app"' },
        { msg: 'config reloaded' },
        { target: 'pooler::web::access', status: 404, path: '/api/msg' },
      ];
      const lines = docs.map((x) => Buffer.from(JSON.stringify(x)));
      const offs = new Int32Array(lines.length * 2);
      let p = 0;
      lines.forEach((l, i) => {
        offs[2 * i] = p;
        offs[2 * i + 1] = l.length;
        p += l.length;
      });
      s.ingest(Buffer.concat(lines), offs);
      for (const state of ['active', 'sealed']) {
        if (state === 'sealed') s.seal();
        const n = (q: string) =>
          unpackHits(
            s.query({ plan: planQuery(parseQuery(q), m), from: -Infinity, to: Infinity, limit: 100, order: 'asc' })
              .hits,
          ).length;
        // `msg` is a field name, not a value of `_exists_`: only the document whose path holds it.
        expect(
          [
            n('RELOAD'),
            n('reload'),
            n('failed'),
            n('"login failed"'),
            n('pooler'),
            n('6432'),
            n('msg'),
            n('reload*'),
            n('nothing'),
          ],
          state,
        ).toEqual([2, 2, 2, 1, 4, 1, 1, 2, 0]);
      }
    } finally {
      s.close();
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('numbers and strings of one keyword field', () => {
  it('index to the same tokens and column values', () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'tidepool-num-'));
    const s = new Shard(
      {
        dir: d,
        shard: 0,
        mapping: parseMapping('- {name: code, type: keyword}\n'),
        fracSize: 1 << 30,
        totalSize: 0,
        retention: 0,
      },
      pino({ level: 'silent' }),
    );
    try {
      const docs = [{ code: 200 }, { code: '200' }, { code: 1.5 }, { code: [300, 200] }, { code: 300 }, { other: 1 }];
      const lines = docs.map((x) => Buffer.from(JSON.stringify(x)));
      const offs = new Int32Array(lines.length * 2);
      let p = 0;
      lines.forEach((l, i) => {
        offs[2 * i] = p;
        offs[2 * i + 1] = l.length;
        p += l.length;
      });
      s.ingest(Buffer.concat(lines), offs);
      const m = parseMapping('- {name: code, type: keyword}\n');
      for (const state of ['active', 'sealed']) {
        if (state === 'sealed') s.seal();
        const count = (q: string) =>
          s.query({ plan: planQuery(parseQuery(q), m), from: -Infinity, to: Infinity, limit: 0, order: 'desc' }).total;
        expect(
          [count('code:200'), count('code:1.5'), count('code:300'), count('code:[100, 250]'), count('_exists_:code')],
          state,
        ).toEqual([3, 1, 2, 3, 5]);
      }
    } finally {
      s.close();
      rmSync(d, { recursive: true, force: true });
    }
  });
});
