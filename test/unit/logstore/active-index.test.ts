// The active fraction's index answers the same while documents keep arriving between queries (inverted tails).
import { describe, expect, it } from 'vitest';
import { ActiveIndex } from '../../../src/logstore/storage/active-index.js';
import { fieldTypes, mappedTypes, parseMapping } from '../../../src/logstore/mapping.js';
import { MISSING } from '../../../src/logstore/storage/fraction-view.js';

const mapping = parseMapping(
  '- {name: level, type: keyword}\n- {name: msg, types: [text, keyword]}\n- {name: n, type: keyword}\n',
);

function rng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe('ActiveIndex', () => {
  it('gives the posting lists and columns a scan of the documents gives, queried at every step', () => {
    const r = rng(11);
    const idx = new ActiveIndex(mapping);
    const docs: { level?: string; msg: string; n: number | number[] }[] = [];
    const words = ['alpha', 'beta', 'gamma', 'delta'];
    for (let step = 0; step < 60; step++) {
      const batch = 1 + Math.floor(r() * (step < 20 ? 3 : 40));
      for (let i = 0; i < batch; i++) {
        const d = {
          ...(r() < 0.8 ? { level: r() < 0.5 ? 'Error' : 'info' } : {}),
          msg: `${words[Math.floor(r() * 4)]} ${words[Math.floor(r() * 4)]}`,
          n: r() < 0.1 ? [7, Math.floor(r() * 5)] : Math.floor(r() * 5),
        };
        docs.push(d);
        idx.addDoc(d);
      }
      const ids = (pred: (d: (typeof docs)[number]) => boolean) => docs.flatMap((d, i) => (pred(d) ? [i] : []));
      expect([...idx.postings('level', 'error')]).toEqual(ids((d) => d.level === 'Error'));
      expect([...idx.postings('_exists_', 'level')]).toEqual(ids((d) => d.level !== undefined));
      for (const w of words) expect([...idx.postings('msg', w)]).toEqual(ids((d) => d.msg.split(' ').includes(w)));
      expect([...idx.postings('n', '7')]).toEqual(ids((d) => (Array.isArray(d.n) ? d.n.includes(7) : d.n === 7)));
      const col = idx.column('level')!;
      expect(Array.from(col.ords, (o) => (o === MISSING ? undefined : col.tokens[o]))).toEqual(
        docs.map((d) => d.level?.toLowerCase()),
      );
      const ncol = idx.column('n')!;
      expect(Array.from(ncol.ords, (o) => Number(ncol.tokens[o]))).toEqual(
        docs.map((d) => (Array.isArray(d.n) ? d.n[0] : d.n)),
      );
    }
    const all = idx.all();
    expect(all.data.length).toBe(all.start[all.start.length - 1]);
  });
});

describe('mapping entries named like Object.prototype members', () => {
  it('are own entries of the mapping, and unmapped ones never find a prototype member', () => {
    const m = parseMapping(
      '- {name: toString, type: keyword}\n- {name: __proto__, types: [text]}\n- {name: msg, type: keyword}\n',
    );
    expect(mappedTypes(m, 'toString')).toEqual(['keyword']);
    expect(mappedTypes(m, '__proto__')).toEqual(['text']);
    expect(mappedTypes(m, 'constructor')).toBeUndefined();
    expect(fieldTypes(m, 'valueOf')).toBeNull();
    expect(fieldTypes(m, 'hasOwnProperty')).toBeNull();
    expect(fieldTypes(m, 'msg')).toEqual(['keyword']);
  });
});
