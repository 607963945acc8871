// The document indexer: native and TypeScript twin give the same answers, and an index built through it is the index
// JSON.parse and ActiveIndex's walk build (same tokens, posting lists, columns, times) for every kind of document.
import { describe, expect, it } from 'vitest';
import { addon } from '../../../src/native/index.js';
import {
  docIndexerTs,
  nativeDocIndexer,
  type DocBatch,
  type DocIndexerFactory,
} from '../../../src/native/doc-indexer.js';
import { ActiveIndex } from '../../../src/logstore/storage/active-index.js';
import { autoMapping, parseMapping, type MappingSpec } from '../../../src/logstore/mapping.js';
import { docTime } from '../../../src/logstore/doc-time.js';
import { MISSING } from '../../../src/logstore/storage/fraction-view.js';
import { sortedTokens } from '../../../src/logstore/storage/token-dict.js';
import { mulberry32 } from '../../helpers/prng.js';

const NOW = Date.parse('2026-11-24T12:00:00Z');
const native: DocIndexerFactory | null =
  addon && typeof addon.docIndexerNew === 'function' ? nativeDocIndexer(addon as never) : null;

const MAPPINGS: [string, MappingSpec][] = [
  ['auto', autoMapping()],
  [
    'explicit',
    parseMapping(
      [
        'max_token_size: 12',
        'mapping-list:',
        '  - {name: msg, types: [text, keyword]}',
        '  - {name: level, type: keyword}',
        '  - {name: path, types: [path, keyword]}',
        '  - {name: n, type: keyword}',
        '  - {name: flag, type: exists}',
        '  - {name: ctx, type: object, mapping-list: [{name: user, type: keyword}, {name: tags, type: text}]}',
        '  - {name: timestamp, type: keyword}',
      ].join('\n'),
    ),
  ],
];

/** Hand-picked documents: every branch of the scan, the time rules and the cases left to the JavaScript path. */
const ODD = [
  '{}',
  '  { "msg" : "Spaced Out" }\t',
  '{"msg":"Hello, World! foo_bar BAZ42 x"}',
  '{"level":"WARN","level2":"x"}',
  '{"msg":"caf\u00e9 na\u00efve"}',
  '{"msg":"caf\\u00e9"}',
  '{"msg":"tab\\there \\"quoted\\" back\\\\slash \\/ \\u0041"}',
  '{"caf\u00e9":"x"}',
  '{"k\\u00e9y":"x"}',
  '{"k\\u0065y":"x"}',
  '{"\u00fcber":{"a":1}}',
  '{"n":1}',
  '{"n":-5}',
  '{"n":0}',
  '{"n":-0}',
  '{"n":1.5}',
  '{"n":1.50}',
  '{"n":1e3}',
  '{"n":1E-7}',
  '{"n":0.000001}',
  '{"n":0.0000001}',
  '{"n":123456789012345}',
  '{"n":1234567890123456}',
  '{"n":12345678901234567890}',
  '{"n":-0.25}',
  '{"n":[1,2,[3,[4]],{"x":5}]}',
  '{"n":true}',
  '{"n":false}',
  '{"n":null}',
  '{"n":[]}',
  '{"n":{}}',
  '{"n":"7"}',
  '{"path":"/a/b/c"}',
  '{"path":"/A/B/"}',
  '{"path":"/"}',
  '{"path":""}',
  '{"path":"a/b"}',
  '{"path":"//x//"}',
  '{"path":"/very/long/segment/names/here"}',
  '{"ctx":{"user":"Bob","tags":"one two","deep":{"x":[1,{"y":"z"}]}}}',
  '{"ctx":[{"user":"a"},{"user":"b"}]}',
  '{"":{"a":1}}',
  '{"":"empty key"}',
  '{"a":{"":1}}',
  '{"flag":"anything at all \u00e9"}',
  '{"flag":1.50}',
  '{"unmapped":"\u00e9", "msg":"ok"}',
  '{"a":1,"a":2}',
  '{"a":{"b":1,"b":2}}',
  '{"a":[{"b":1},{"b":2}]}',
  '{"1":"x"}',
  '{"a":{"2":"y"}}',
  '{"_id":"x"}',
  '{"a":{"_id":"x"}}',
  '{"toString":"x"}',
  '{"constructor":{"a":1}}',
  '{"a":{"toString":"x"}}',
  '{"_exists_":"msg"}',
  '[1,2]',
  '"str"',
  '42',
  'null',
  '{',
  '{"a":}',
  '{"a":1,}',
  '{"a":01}',
  '{"a":1.}',
  '{"a":.5}',
  '{"a":-}',
  '{"a":tru}',
  '{"a":"x"} x',
  '{"a":"ctl\u0001"}',
  '{"a":"\\x"}',
  '{"a":"\\u12"}',
  '{"a" "b"}',
  '{a:1}',
  '\ufeff{"a":1}',
  '{"a":[1 2]}',
  '{"a":[1,]}',
  `{"a":${'['.repeat(70)}${']'.repeat(70)}}`,
  `{"a":${'{"b":'.repeat(70)}1${'}'.repeat(70)}}`,
  '{"timestamp":"2026-11-20T10:00:00.123Z","msg":"x"}',
  '{"timestamp":"2026-11-20T10:00:00Z"}',
  '{"timestamp":"2026-11-20 10:00:00"}',
  '{"timestamp":"2026-11-20t10:00:00.5+02:00"}',
  '{"timestamp":"2026-11-20T10:00:00.123456789-0530"}',
  '{"timestamp":"2026-11-20T10:00:00.1234567890Z"}',
  '{"timestamp":"2026-02-29T10:00:00.000Z"}',
  '{"timestamp":"2024-02-29T10:00:00.000Z"}',
  '{"timestamp":"2026-13-01T10:00:00.000Z"}',
  '{"timestamp":"2026-11-20T24:00:00.000Z"}',
  '{"timestamp":"2026-11-20T10:00:00.00xZ"}',
  '{"timestamp":"0050-01-01T00:00:00Z"}',
  '{"timestamp":"2030-01-01T00:00:00Z"}',
  '{"timestamp":"1969-01-01T00:00:00Z"}',
  '{"timestamp":1795132801}',
  '{"timestamp":1795132801.5}',
  '{"timestamp":1795132801000}',
  '{"timestamp":1795132801000000}',
  '{"timestamp":1795132801000000000}',
  '{"timestamp":0.25,"time":"1795132801"}',
  '{"timestamp":"1795132801.123"}',
  '{"timestamp":"17951328010001"}',
  '{"timestamp":-1}',
  '{"timestamp":1e400}',
  '{"timestamp":true,"ts":1795132802}',
  '{"timestamp":null,"@timestamp":"2026-11-20T10:00:00Z"}',
  '{"timestamp":{"a":1},"ts":"bad","time":"2026-11-21T00:00:00+00:00"}',
  '{"timestamp":"caf\u00e9 2026-11-20T10:00:00Z"}',
  '{"timestamp":"\\u0032026-11-20T10:00:00.000Z"}',
  '{"timestamp":[1795132801]}',
  '{"x":{"timestamp":"2030-01-01T00:00:00Z"}}',
  '{"time":"2026-11-20T10:00:00 "}',
  '{"ts":"2026-11-20T10:00:00+0"}',
];

const WORDS = ['Alpha', 'beta', 'GAMMA', 'delta_x', 'e9', 'Zeta', '/usr/lib', 'a-b.c', 'x'.repeat(20)];
const KEYS = ['msg', 'level', 'path', 'n', 'flag', 'ctx', 'user', 'tags', 'other', 'x', 'Ünï', 'a.b'];

function randomValue(r: () => number, depth: number): unknown {
  const k = r();
  if (depth < 3 && k < 0.12) {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < 1 + r() * 3; i++) o[KEYS[(r() * KEYS.length) | 0]!] = randomValue(r, depth + 1);
    return o;
  }
  if (depth < 3 && k < 0.2) return Array.from({ length: (r() * 4) | 0 }, () => randomValue(r, depth + 1));
  if (k < 0.3) return Math.floor(r() * 1000) - 100;
  if (k < 0.35) return Math.round(r() * 1e6) / 1000;
  if (k < 0.38) return r() < 0.5;
  if (k < 0.4) return null;
  if (k < 0.43) return 'ünïcödé ' + WORDS[(r() * WORDS.length) | 0];
  return Array.from({ length: 1 + ((r() * 4) | 0) }, () => WORDS[(r() * WORDS.length) | 0]).join(r() < 0.5 ? ' ' : '/');
}

function randomDoc(r: () => number, i: number): string {
  const d: Record<string, unknown> = {};
  if (r() < 0.8) d.timestamp = new Date(NOW - 86_400_000 + i * 1000).toISOString();
  for (let f = 0; f < 1 + r() * 6; f++) d[KEYS[(r() * KEYS.length) | 0]!] = randomValue(r, 0);
  let s = JSON.stringify(d);
  // Spellings JSON.stringify never makes: escapes and spaces.
  if (r() < 0.1) s = s.replace(/"beta"/g, '"b\\u0065ta"').replace(/,/g, ' , ');
  return s;
}

function batchOf(docs: string[]): { buf: Buffer; offs: Int32Array } {
  const parts: Buffer[] = [];
  const offs: number[] = [];
  let pos = 0;
  for (const d of docs) {
    const b = Buffer.from(d);
    offs.push(pos, b.length);
    parts.push(b, Buffer.from('\n{"index":{}}\n'));
    pos += b.length + 14;
  }
  return { buf: Buffer.concat(parts), offs: Int32Array.from(offs) };
}

function plain(b: DocBatch) {
  return {
    ...b,
    times: Array.from(b.times),
    ends: Array.from(b.ends),
    toks: Array.from(b.toks),
    colEnds: Array.from(b.colEnds),
    cols: Array.from(b.cols),
    newTokFields: Array.from(b.newTokFields),
  };
}

/**
 * What ActiveIndex answers: every field's tokens with their posting lists, every column (the value of each
 * document), the fields seen. Token ids and column ordinals are not compared: when the JavaScript path takes some
 * documents of a batch, the batch's other documents name their new tokens first (nothing reads that order: the seal
 * sorts each field's dictionary, aggregations sort their buckets).
 */
function snapshot(idx: ActiveIndex) {
  const fields = idx
    .fields()
    .map((f) => {
      const { tokens, lists } = idx.tokenLists(f.name);
      const col = idx.column(f.name);
      const byToken = tokens.map((t, i) => [t, Array.from(lists[i]!)] as const).sort((a, b) => (a[0] < b[0] ? -1 : 1));
      return { name: f.name, byToken, col: col && Array.from(col.ords, (o) => (o === MISSING ? null : col.tokens[o])) };
    })
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  return { docs: idx.docCount, tokens: idx.tokenCount, fields, seen: idx.seenFields().sort() };
}

/** Indexes docs as the shard does: a batch through indexBatch, the documents it leaves through JSON.parse + addDoc. */
let scannedDocs = 0;

function viaIndexer(idx: ActiveIndex, docs: string[]): number[] {
  const { buf, offs } = batchOf(docs);
  const b = idx.indexBatch(buf, offs, 0, docs.length, NOW);
  const times: number[] = [];
  docs.forEach((d, i) => {
    if (!Number.isNaN(b.times[i]!)) {
      scannedDocs++;
      idx.addIndexed(b, i);
      times.push(b.times[i]!);
      return;
    }
    const doc = parseOrNull(d);
    if (doc) {
      idx.addDoc(doc);
      times.push(docTime(doc, NOW).time);
    } else times.push(-1);
  });
  return times;
}

function parseOrNull(d: string): Record<string, unknown> | null {
  try {
    const doc = JSON.parse(d) as unknown;
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return null;
    // The shard refuses `_id`; a top-level `toString` or `_exists_` breaks ActiveIndex's walk (left alone here).
    return ['_id', 'toString', '_exists_'].some((k) => Object.hasOwn(doc, k)) ? null : (doc as Record<string, unknown>);
  } catch {
    return null;
  }
}

function viaWalk(idx: ActiveIndex, docs: string[]): number[] {
  return docs.map((d) => {
    const doc = parseOrNull(d);
    if (!doc) return -1;
    idx.addDoc(doc);
    return docTime(doc, NOW).time;
  });
}

describe('document indexer', () => {
  it('the native addon is built (the twin is compared against it)', () => {
    expect(native).not.toBeNull();
  });

  it.each(MAPPINGS)('native and twin give the same answers, call after call (%s mapping)', (_name, mapping) => {
    const a = native!(mapping);
    const b = docIndexerTs(mapping);
    const r = mulberry32(7);
    const docs = [...ODD, ...Array.from({ length: 600 }, (_, i) => randomDoc(r, i))];
    for (let start = 0; start < docs.length;) {
      const n = Math.min(1 + ((r() * 90) | 0), docs.length - start);
      const { buf, offs } = batchOf(docs.slice(start, start + n));
      const first = (r() * Math.min(3, n)) | 0;
      expect(plain(a.index(buf, offs, first, n - first, NOW))).toEqual(
        plain(b.index(buf, offs, first, n - first, NOW)),
      );
      // Fields and tokens the JavaScript path makes are numbered the same on both sides.
      const name = `learned${start}`;
      expect(a.learnField(name)).toBe(b.learnField(name));
      expect(a.learnToken(1, `tok${start}`)).toBe(b.learnToken(1, `tok${start}`));
      expect(a.learnToken(0, name)).toBe(b.learnToken(0, name));
      start += n;
    }
    expect(a.bytes).toBeGreaterThan(0);
  });

  it.each([
    ['native', native],
    ['twin', docIndexerTs],
  ] as const)(
    'fieldTokensIn gives a dictionary back range by range, tokens added between ranges after its end (%s)',
    (_n, make) => {
      const ix = make!(autoMapping());
      const field = ix.learnField('k');
      const words = Array.from({ length: 500 }, (_, i) =>
        i % 7 === 0 ? `caf\u00e9${i}` : `w${i}`.repeat(1 + (i % 3)),
      );
      const ids = words.map((w) => ix.learnToken(field, w));
      const { end } = ix.fieldTokensIn(field, 0, 0);
      expect(ix.fieldTokensIn(field, 0, 0).tokens.lens).toHaveLength(0);
      const back = new Map<number, string>();
      const read = (from: number, to: number) => {
        const { text, lens, ids: got } = ix.fieldTokensIn(field, from, to).tokens;
        let at = 0;
        lens.forEach((l, i) => {
          expect(back.has(got[i]!)).toBe(false);
          back.set(got[i]!, text.slice(at, at + l));
          at += l;
        });
        expect(at).toBe(text.length);
      };
      const step = Math.ceil(end / 9);
      for (let from = 0; from < end; from += step) {
        read(from, Math.min(end, from + step));
        // Added while the ranges are read: at the end or after, so in none of them.
        ix.learnToken(field, `late${from}`);
      }
      expect(back).toEqual(new Map(ids.map((t, i) => [t, words[i]!])));
      expect(ix.fieldTokensIn(field, 0, 0).end).toBeGreaterThan(end);
    },
  );

  it.each([
    ['native', native],
    ['twin', docIndexerTs],
  ] as const)(
    'is the only dictionary: find and fieldTokens give every token back exactly, lone surrogates too (%s)',
    (_n, make) => {
      const ix = make!(autoMapping());
      const words = ['plain', 'caf\u00e9', '\u4e2d\u6587', '\ud83d\ude00', 'lone\ud800', '\udfffx', '\ufffd', ''];
      const field = ix.learnField('k');
      const ids = words.map((w) => ix.learnToken(field, w));
      expect(new Set(ids).size).toBe(words.length);
      words.forEach((w, i) => expect(ix.find(field, w)).toBe(ids[i]));
      expect(ix.find(field, 'lone\ufffd')).toBe(-1);
      expect(ix.find(field + 1, 'plain')).toBe(-1);
      const { text, lens, ids: got } = ix.fieldTokens(field);
      const back = new Map<number, string>();
      let at = 0;
      lens.forEach((l, i) => {
        back.set(got[i]!, text.slice(at, at + l));
        at += l;
      });
      expect(at).toBe(text.length);
      expect(back).toEqual(new Map(ids.map((t, i) => [t, words[i]!])));
      // Sorted for the seal as JavaScript sorts strings (UTF-16 code units: U+1F600 before U+FFFD), ASCII fields too.
      const byJs = [...words].sort();
      const sorted = ix.sortedField(field);
      expect(sortedTokens(sorted)).toEqual(byJs);
      expect(Array.from(sorted.ids)).toEqual(byJs.map((w) => ids[words.indexOf(w)]));
      expect(sorted.wide).toBe(true);
      const ascii = ix.learnField('a');
      const plainWords = ['b', 'ab', 'a', '', 'B', 'a~', 'a0', 'zz'];
      const plainIds = plainWords.map((w) => ix.learnToken(ascii, w));
      const sa = ix.sortedField(ascii);
      expect(sortedTokens(sa)).toEqual([...plainWords].sort());
      expect(Array.from(sa.ids)).toEqual([...plainWords].sort().map((w) => plainIds[plainWords.indexOf(w)]));
      expect(sa.wide).toBe(false);
      // Through ActiveIndex (documents the JavaScript path takes): queries, columns and the field list read the same tokens.
      const idx = new ActiveIndex(autoMapping());
      const docs = ['{"k":"lone\\ud800"}', '{"k":"\\ud83d\\ude00","n":7}', '{"k":"plain","n":7}', '{"k":"caf\u00e9"}'];
      viaIndexer(idx, docs);
      expect(Array.from(idx.postings('k', 'lone\ud800'))).toEqual([0]);
      expect(Array.from(idx.postings('k', '\ud83d\ude00'))).toEqual([1]);
      expect(Array.from(idx.postings('n', '7'))).toEqual([1, 2]);
      expect(idx.postings('k', 'lone\ufffd').length).toBe(0);
      const col = idx.column('k')!;
      expect(Array.from(col.ords, (o) => col.tokens[o])).toEqual(['lone\ud800', '\ud83d\ude00', 'plain', 'caf\u00e9']);
      expect(idx.seenFields().sort()).toEqual(['k', 'n']);
      expect(idx.tokenLists('k').tokens.sort()).toEqual(['caf\u00e9', 'lone\ud800', 'plain', '\ud83d\ude00']);
    },
  );

  it.each([
    ['native', native],
    ['twin', docIndexerTs],
  ] as const)(
    'sorts keys that share long prefixes (client addresses, paths, NUL bytes) as JavaScript sorts strings (%s)',
    (_n, make) => {
      const ix = make!(autoMapping());
      const f = ix.learnField('ip');
      const r = mulberry32(23);
      const words = new Set<string>([
        '',
        'a',
        'a\u0000',
        'a\u0000b',
        '0123456789abcdef',
        '0123456789abcdef0',
        '0123456789abcde',
        '0123456789abcdeg',
      ]);
      // Few first octets, so many keys tie on their first 8 and first 16 bytes.
      while (words.size < 3000)
        words.add(
          `${100 + ((r() * 3) | 0)}.${10 + ((r() * 4) | 0)}.${(r() * 255) | 0}.${(r() * 255) | 0}${r() < 0.1 ? `.${(r() * 9) | 0}` : ''}`,
        );
      const list = [...words];
      const ids = list.map((w) => ix.learnToken(f, w));
      const sorted = ix.sortedField(f);
      const byJs = [...list].sort();
      expect(sortedTokens(sorted)).toEqual(byJs);
      expect(Array.from(sorted.ids)).toEqual(byJs.map((w) => ids[list.indexOf(w)]));
    },
  );

  it.each([
    ['native', native],
    ['twin', docIndexerTs],
  ] as const)('release frees the dictionary at once, and a released indexer refuses further calls (%s)', (_n, make) => {
    const ix = make!(autoMapping());
    const f = ix.learnField('k');
    for (let i = 0; i < 20_000; i++) ix.learnToken(f, `token-${i}`);
    const before = ix.bytes;
    expect(before).toBeGreaterThan(20_000 * 16);
    ix.release();
    expect(ix.bytes).toBeLessThan(before / 10);
    expect(() => ix.find(f, 'token-1')).toThrow();
    expect(() => ix.learnToken(f, 'token-1')).toThrow();
  });

  it('documents it cannot reproduce exactly are left to JSON.parse (time NaN)', () => {
    const ix = docIndexerTs(autoMapping());
    const left = [
      '{"a":1,"a":2}',
      '{"1":"x"}',
      '{"_id":"x"}',
      '{"toString":"x"}',
      '{"n":1.50}',
      '{"n":"caf\u00e9"}',
      '{"timestamp":"2030-01-01T00:00:00Z"}',
      '{bad',
      '[1]',
    ];
    const kept = [
      '{"a":[{"b":1},{"b":2}]}',
      '{"n":1.5}',
      '{"a":{"_id":"x"}}',
      '{"caf\u00e9":"x"}',
      '{"timestamp":"2026-11-20T10:00:00Z"}',
    ];
    for (const impl of native ? [ix, native(autoMapping())] : [ix]) {
      const { buf, offs } = batchOf([...left, ...kept]);
      const t = Array.from(impl.index(buf, offs, 0, left.length + kept.length, NOW).times);
      expect(t.slice(0, left.length).every(Number.isNaN)).toBe(true);
      expect(t.slice(left.length).some(Number.isNaN)).toBe(false);
    }
  });

  it.each(MAPPINGS)(
    'an index built through it equals the one JSON.parse and the walk build (%s mapping)',
    (_name, mapping) => {
      const r = mulberry32(11);
      const docs = [...ODD, ...Array.from({ length: 800 }, (_, i) => randomDoc(r, i))];
      const walked = new ActiveIndex(mapping);
      const wTimes = viaWalk(walked, docs);
      const indexed = new ActiveIndex(mapping);
      const iTimes: number[] = [];
      scannedDocs = 0;
      for (let start = 0; start < docs.length; start += 97)
        iTimes.push(...viaIndexer(indexed, docs.slice(start, start + 97)));
      // Most documents go through the indexer, the rest through the walk: both paths and their mix are compared.
      expect(scannedDocs).toBeGreaterThan(docs.length * 0.6);
      expect(scannedDocs).toBeLessThan(docs.length * 0.95);
      expect(iTimes).toEqual(wTimes);
      expect(snapshot(indexed)).toEqual(snapshot(walked));
    },
  );
});
