// IdTable and SlotSet (src/pooler/id-table.ts) against Map and Set under random churn, and the garbage they leave:
// a long-lived Map churned like the relay's clients keeps what it held alive through young collections; these do not.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { IdTable, SlotSet } from '../../../src/pooler/id-table.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('IdTable', () => {
  it('answers as a Map does through 200 000 random sets, gets and deletes (sequential ids, pids, collisions)', () => {
    for (const [seed, space] of [
      [1, 50],
      [2, 5000],
      [3, 1 << 30],
    ] as const) {
      const r = rng(seed);
      const t = new IdTable<number>(4);
      const m = new Map<number, number>();
      let next = 1;
      for (let i = 0; i < 200_000; i++) {
        const op = r();
        // Mostly recent sequential ids (the relay's), sometimes any id in the space.
        const key = r() < 0.7 ? Math.max(1, next - Math.floor(r() * 40)) : 1 + Math.floor(r() * space);
        if (op < 0.4) {
          const k = r() < 0.7 ? next++ : key;
          t.set(k, i);
          m.set(k, i);
        } else if (op < 0.8) {
          if (t.delete(key) !== m.delete(key)) expect.fail(`delete ${key} at step ${i}`);
        } else if (t.get(key) !== m.get(key)) {
          expect.fail(`get ${key} at step ${i}: ${t.get(key)} against ${m.get(key)}`);
        }
        if (t.size !== m.size) expect.fail(`size at step ${i}: ${t.size} against ${m.size}`);
      }
      // Same size and every key of the Map found with its value: nothing more, nothing less.
      for (const k of m.keys()) expect(t.get(k)).toBe(m.get(k));
    }
  });

  it('refuses keys that are not positive int32s', () => {
    const t = new IdTable<string>();
    for (const bad of [0, -1, 1.5, 2 ** 31, Number.NaN]) expect(() => t.set(bad, 'x')).toThrow(RangeError);
    expect(t.get(0)).toBeUndefined();
    expect(t.delete(0)).toBe(false);
  });
});

describe('SlotSet', () => {
  it('answers as a Set does through random adds and deletes, and iterates over exactly its members', () => {
    const r = rng(7);
    const objs = Array.from({ length: 300 }, (_, i) => ({ slot: -1, i }));
    const s = new SlotSet<{ slot: number; i: number }>();
    const ref = new Set<{ slot: number; i: number }>();
    for (let n = 0; n < 100_000; n++) {
      const o = objs[Math.floor(r() * objs.length)]!;
      if (r() < 0.5) {
        s.add(o);
        ref.add(o);
      } else if (s.delete(o) !== ref.delete(o)) expect.fail(`delete at step ${n}`);
      if (s.size !== ref.size || s.has(o) !== ref.has(o)) expect.fail(`size or has at step ${n}`);
    }
    expect(new Set(s)).toEqual(ref);
    for (const o of objs) expect(o.slot >= 0).toBe(ref.has(o));
  });
});

describe('garbage under login churn (node --trace-gc-nvp)', () => {
  // Clients of ~1 KB each come and go, 10 alive at a time, through a container that lives in the old generation.
  const script = (kind: string) => `
    const { IdTable } = await import(${JSON.stringify(fileURLToPath(new URL('../../../dist/src/pooler/id-table.js', import.meta.url)))});
    const t = ${kind === 'map' ? 'new Map()' : 'new IdTable()'};
    for (let i = 0; i < 4; i++) globalThis.gc();
    const live = [];
    for (let id = 1; id < 600000; id++) {
      t.set(id, { id, payload: new Array(100).fill(id) });
      live.push(id);
      if (live.length > 10) t.delete(live.shift());
    }`;
  const survival = (kind: string) => {
    const out = execFileSync(
      process.execPath,
      ['--expose-gc', '--trace-gc-nvp', '--max-semi-space-size=8', '--input-type=module', '-e', script(kind)],
      { encoding: 'utf8' },
    );
    const ratios = [...out.matchAll(/gc=s .*?average_survival_ratio=([\d.]+)%/g)].map((m) => Number(m[1]));
    expect(ratios.length, out.slice(0, 500)).toBeGreaterThan(5);
    return ratios[ratios.length - 1]!;
  };

  it('an IdTable leaves what it let go to die young, where a Map keeps it alive', () => {
    const map = survival('map');
    const table = survival('table');
    console.log(`young-generation survival under churn: Map ${map}%, IdTable ${table}%`);
    expect(table).toBeLessThan(5);
    // The pathology this container exists for (V8's obsolete hash tables chained to their successors).
    expect(map).toBeGreaterThan(20);
  });
});
