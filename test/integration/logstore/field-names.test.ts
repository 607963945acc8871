// Field names that are also JavaScript object names (toString, constructor, __proto__) or the store's own
// `_exists_` pseudo-field: the documents are stored and searchable, and survive a kill -9 and a restart.
import { afterEach, describe, expect, it } from 'vitest';
import { type LogstoreProcess, bulk, ndjson, postJson, startLogstore } from '../../helpers/logstore.js';

let running: LogstoreProcess[] = [];
afterEach(async () => {
  for (const ls of running) await ls.cleanup();
  running = [];
});

const DOCS: Record<string, unknown>[] = [
  { seq: 1, toString: 'ts', message: 'one' },
  { seq: 2, constructor: 7, hasOwnProperty: 'x', message: 'two' },
  { seq: 3, valueOf: { inner: 'v' }, message: 'three' },
  { seq: 4, _exists_: 'seq', message: 'four' },
];

async function count(url: string, query: string): Promise<number> {
  const r = await postJson<{ total: number }>(`${url}/search`, {
    query: { query, from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' },
    size: 0,
    with_total: true,
  });
  expect(r.status).toBe(200);
  return r.body.total;
}

describe('field names', () => {
  for (const mapping of ['auto', 'explicit'] as const) {
    it(`stores documents whose fields are named like Object.prototype members or _exists_ (${mapping} mapping)`, async () => {
      const ls = await startLogstore({
        storage: { shards: 1 },
        ...(mapping === 'explicit'
          ? { mapping: 'mapping-list:\n  - {name: seq, type: keyword}\n  - {name: message, type: keyword}\n' }
          : {}),
      });
      running.push(ls);
      // __proto__ must be written by hand: as an object literal key it would set the prototype, not a field.
      const body = ndjson(DOCS) + '{"index":{}}\n{"seq":5,"__proto__":{"polluted":1},"message":"five"}\n';
      const r = await bulk(ls.url, body);
      expect(r.status).toBe(200);
      expect(r.body.errors).toBe(false);
      expect(r.body.items.map((it) => Object.values(it)[0]!.status)).toEqual([201, 201, 201, 201, 201]);
      for (const phase of ['live', 'after kill -9 and restart']) {
        expect(await count(ls.url, '*'), phase).toBe(5);
        for (const m of ['one', 'two', 'three', 'four', 'five'])
          expect(await count(ls.url, `message:${m}`), `${phase}: ${m}`).toBe(1);
        if (mapping === 'auto') {
          expect(await count(ls.url, 'toString:ts'), phase).toBe(1);
          expect(await count(ls.url, 'constructor:7'), phase).toBe(1);
          expect(await count(ls.url, 'valueOf.inner:v'), phase).toBe(1);
          expect(await count(ls.url, '_exists_:toString'), phase).toBe(1);
          // A document's own `_exists_` field does not add to the pseudo-field: only seq's real owners match.
          expect(await count(ls.url, '_exists_:seq'), phase).toBe(5);
        }
        if (phase === 'live') {
          await ls.kill9();
          await ls.restart();
        }
      }
    });
  }
});
