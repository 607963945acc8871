// Seeded fuzzing of both query languages over real HTTP: random, malformed and deeply nested seq-ql and
// Elasticsearch query DSL (query_string included) always get 200 or 400, never 500, and the store keeps
// answering. A failure prints the query; the seed makes it reproducible.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, startLogstore } from '../../helpers/logstore.js';
import { mulberry32 } from '../../helpers/prng.js';

const MAPPING =
  'mapping-list:\n  - {name: a, type: keyword}\n  - {name: t, type: text}\n  - {name: p, type: path}\n  - {name: n, type: keyword}\n';

let ls: LogstoreProcess;
beforeAll(async () => {
  ls = await startLogstore({ mapping: MAPPING, storage: { frac_size: '8KB' } });
  const base = Date.parse('2026-05-01T00:00:00Z');
  const docs = Array.from({ length: 400 }, (_, i) => ({
    '@timestamp': new Date(base + i * 1000).toISOString(),
    a: ['x', 'xy', 'foo', 'x'.repeat(90)][i % 4],
    t: `word${i % 13} other ${i}`,
    p: `/v${i % 3}/items/${i}`,
    n: i % 50,
  }));
  expect((await bulk(ls.url, ndjson(docs))).body.errors).toBe(false);
});
afterAll(async () => {
  await ls?.cleanup();
});

/** `body` as JSON text (deep queries come as text: JSON.stringify recurses, and would run out of stack here). */
async function post(path: string, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${ls.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: res.status, text: await res.text() };
}

type Rnd = () => number;
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const int = (rnd: Rnd, n: number) => Math.floor(rnd() * n);

/** A depth: mostly small, sometimes about the limit (100), sometimes far past any stack. */
function depth(rnd: Rnd): number {
  const r = rnd();
  return r < 0.7 ? int(rnd, 6) : r < 0.9 ? 95 + int(rnd, 12) : 5000 + int(rnd, 20_000);
}

const SEQ_PIECES = [
  '(',
  ')',
  'not ',
  ' and ',
  ' or ',
  'a:',
  't:',
  'p:',
  'n:',
  'zz:',
  '*',
  'x',
  'foo',
  '"',
  "'",
  '`',
  '\\',
  'in(',
  ',',
  '[',
  ']',
  ' to ',
  '_exists_:',
  ' | ',
  'fields ',
  'except ',
  '#',
  '\n',
  ' ',
  '1',
  '-',
  '/v1',
  'AND',
  'x*x*x*x*x*x*y',
  ':',
];

function seqValue(rnd: Rnd): string {
  return pick(rnd, [
    'x',
    'foo',
    '*x*',
    '"x y"',
    '`raw`',
    'x*x*x*x*x*x*x*x*x*x*x*x*y',
    '[1, 20]',
    '(10 to *]',
    'in(x, foo, "xy")',
    '/v1',
    'word3',
    '*',
  ]);
}

/** A seq-ql query: well-formed with random nesting, or a soup of pieces. */
function seqQuery(rnd: Rnd): string {
  if (rnd() < 0.35) return Array.from({ length: 1 + int(rnd, 40) }, () => pick(rnd, SEQ_PIECES)).join('');
  const node = (d: number): string => {
    if (d <= 0 || rnd() < 0.25) return `${pick(rnd, ['a', 't', 'p', 'n', '_exists_'])}:${seqValue(rnd)}`;
    const r = rnd();
    if (r < 0.3) return `(${node(d - 1)} ${pick(rnd, ['and', 'or'])} ${node(d - 1)})`;
    if (r < 0.5) return `not ${node(d - 1)}`;
    return `(${node(d - 1)})`;
  };
  const d = depth(rnd);
  if (d > 50) {
    // Deep nesting built as text (a recursive generator would run out of stack itself).
    const open = pick(rnd, ['(', 'not ', 'not (', '((']);
    const close = open.includes('(') ? ')'.repeat(open.split('(').length - 1) : '';
    return `${open.repeat(d)}a:x${rnd() < 0.8 ? close.repeat(d) : ''}`;
  }
  if (rnd() < 0.1) return Array.from({ length: 1 + int(rnd, 3000) }, (_, i) => `n:${i}`).join(' or ');
  return node(d) + (rnd() < 0.1 ? ' | fields a, t' : '');
}

const QS_PIECES = [
  '(',
  ')',
  'AND ',
  'OR ',
  'NOT ',
  '+',
  '-',
  '!',
  '&&',
  '||',
  'a:',
  't:',
  'x',
  '*',
  '"',
  '\\',
  '[',
  ']',
  '{',
  '}',
  ' TO ',
  '>=',
  '<',
  '_exists_:',
  '~',
  '^',
  '?',
  '/',
  ' ',
  'x*x*x*x*x*x*x*y',
];

/** `maxDepth`: a query in a URL stays under node:http's 16 KB request line (past it: 431, before any handler). */
function qsString(rnd: Rnd, maxDepth = Infinity): string {
  const d = Math.min(depth(rnd), maxDepth);
  if (d > 50) return `${'('.repeat(d)}a:x${rnd() < 0.8 ? ')'.repeat(d) : ''}`;
  return Array.from({ length: 1 + int(rnd, 30) }, () => pick(rnd, QS_PIECES)).join('');
}

/** A random query DSL object, sometimes malformed (unknown kinds, wrong types, several keys). */
function dsl(rnd: Rnd, d: number): unknown {
  const field = pick(rnd, ['a', 't', 'p', 'n', 'zz', '@timestamp']);
  const value = pick(rnd, ['x', 'foo', 'word3 other', '*x*x*x*x*x*x*x*x*y', 'x*', 3, true, null, [], {}]);
  const r = rnd();
  if (d > 0 && r < 0.35) {
    const list = () => Array.from({ length: int(rnd, 4) }, () => dsl(rnd, d - 1));
    const body: Record<string, unknown> = {};
    for (const k of ['must', 'filter', 'should', 'must_not'])
      if (rnd() < 0.5) body[k] = rnd() < 0.2 ? dsl(rnd, d - 1) : list();
    if (rnd() < 0.1) body.minimum_should_match = pick(rnd, [0, 1, 2, '1', 'x']);
    return { bool: body };
  }
  const leaves: unknown[] = [
    { match_all: {} },
    { match_none: {} },
    { term: { [field]: value } },
    { term: { [field]: { value } } },
    { terms: { [field]: [value, 'x', 'foo'] } },
    { match: { [field]: value } },
    { match: { [field]: { query: value, operator: pick(rnd, ['and', 'or', 'xor']) } } },
    { match_phrase: { [field]: value } },
    { prefix: { [field]: value } },
    { wildcard: { [field]: { value } } },
    { wildcard: { [field]: value } },
    { exists: { field } },
    { ids: { values: [value] } },
    { range: { [field]: { gte: value, lt: pick(rnd, ['z', 10, 'now', 'now-1d/d', '2026-05-01']) } } },
    { query_string: { query: qsString(rnd), default_field: pick(rnd, ['a', 't', '*', undefined]) } },
    { unknown_kind: {} },
    { term: { a: 'x' }, match: { a: 'x' } },
    'a string',
    42,
    null,
    [],
  ];
  return pick(rnd, leaves);
}

/** The JSON text of a DSL query nested `d` bools deep, written as text (no recursion). */
function deepBool(rnd: Rnd, d: number): string {
  let open = '';
  let close = '';
  for (let i = 0; i < d; i++) {
    const list = rnd() < 0.5;
    open += `{"bool":{"${pick(rnd, ['must', 'should', 'must_not', 'filter'])}":${list ? '[' : ''}`;
    close = `${list ? ']' : ''}}}${close}`;
  }
  return open + JSON.stringify(dsl(rnd, 0)) + close;
}

describe('query limits over HTTP', () => {
  it('a query nested 10 000 deep is refused with 400 naming the limit, in seq-ql, the DSL and query_string', async () => {
    const seq = await post(
      '/search',
      JSON.stringify({ query: { query: `${'('.repeat(10_000)}a:x${')'.repeat(10_000)}` } }),
    );
    expect(seq.status).toBe(400);
    expect(JSON.parse(seq.text)).toMatchObject({
      status: 400,
      error: { code: 'query_too_complex', type: 'query_too_complex', limit: 'max_depth', max: 100 },
    });
    const dslText = `${'{"bool":{"must":['.repeat(10_000)}{"term":{"a":"x"}}${']}}'.repeat(10_000)}`;
    const es = await post('/logs/_search', `{"query":${dslText}}`);
    expect(es.status).toBe(400);
    const body = JSON.parse(es.text) as { status: number; error: { type: string; reason: string } };
    expect(body.status).toBe(400);
    expect(body.error.type).toBe('illegal_argument_exception');
    expect(body.error.reason).toMatch(/deeper than 100 levels.*max_depth/);
    const qs = await post(
      '/logs/_search',
      JSON.stringify({ query: { query_string: { query: `${'('.repeat(10_000)}a:x${')'.repeat(10_000)}` } } }),
    );
    expect([qs.status, (JSON.parse(qs.text) as { error: { type: string } }).error.type]).toEqual([
      400,
      'illegal_argument_exception',
    ]);
    const terms = await post(
      '/logs/_search',
      JSON.stringify({ query: { terms: { a: Array.from({ length: 70_000 }, (_, i) => `v${i}`) } } }),
    );
    expect([terms.status, (JSON.parse(terms.text) as { error: { type: string } }).error.type]).toEqual([
      400,
      'too_many_clauses',
    ]);
  });
});

describe('query fuzzing', () => {
  it('seq-ql: 600 random and deeply nested queries get 200 or 400', async () => {
    const rnd = mulberry32(20261128);
    const seen = new Set<number>();
    for (let i = 0; i < 600; i++) {
      const query = seqQuery(rnd);
      const r = await post('/search', JSON.stringify({ query: { query }, size: 3 }));
      expect([200, 400], `${r.status} ${r.text.slice(0, 300)} for ${JSON.stringify(query.slice(0, 300))}`).toContain(
        r.status,
      );
      seen.add(r.status);
    }
    // Both answers came up: the generator reaches evaluation as well as every refusal.
    expect([...seen].sort()).toEqual([200, 400]);
  });

  it('Elasticsearch DSL and ?q=: 600 random and deeply nested queries get 200 or 400', async () => {
    const rnd = mulberry32(1128);
    const seen = new Set<number>();
    for (let i = 0; i < 600; i++) {
      const d = depth(rnd);
      const query = d > 8 ? deepBool(rnd, d) : JSON.stringify(dsl(rnd, d) ?? null);
      const r = rnd();
      const res =
        r < 0.7
          ? await post('/logs/_search', `{"query":${query},"size":2}`)
          : r < 0.85
            ? await post('/logs/_count', `{"query":${query}}`)
            : await fetch(`${ls.url}/logs/_search?q=${encodeURIComponent(qsString(rnd, 2000))}&df=a`).then(
                async (x) => ({ status: x.status, text: await x.text() }),
              );
      expect([200, 400], `${res.status} ${res.text.slice(0, 300)} for ${query.slice(0, 300)}`).toContain(res.status);
      seen.add(res.status);
    }
    expect([...seen].sort()).toEqual([200, 400]);
    // Still answering after all of it.
    expect((await fetch(`${ls.url}/status`)).status).toBe(200);
  });
});
