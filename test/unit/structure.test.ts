// The source tree's shape: no import cycles among src/ modules, no src/ import that leaves src/ (into dist/ or
// elsewhere), and src/shared/ only holds what more than one service imports.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Relative imports of a module that exist at run time (`import type` and `export type` are erased, so they cannot form a cycle). */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'(\.[^']+)'/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[2]) continue;
    out.push(path.resolve(path.dirname(file), m[3]!.replace(/\.js$/, '.ts')));
  }
  for (const m of text.matchAll(/await import\('(\.[^']+)'\)/g))
    out.push(path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')));
  return out;
}

const modules = files(path.join(ROOT, 'src'));
const graph = new Map(modules.map((f) => [f, runtimeImports(f)]));
const rel = (f: string) => path.relative(ROOT, f);

describe('source structure', () => {
  it('has no import cycles', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (f: string) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...stack.slice(stack.indexOf(f)), f].map(rel).join(' -> '));
        return;
      }
      state.set(f, 'open');
      stack.push(f);
      for (const dep of graph.get(f) ?? []) visit(dep);
      stack.pop();
      state.set(f, 'done');
    };
    for (const f of modules) visit(f);
    expect(cycles).toEqual([]);
  });

  it('has no import, type-only ones included, that walks out of src/', () => {
    const out: string[] = [];
    for (const f of modules) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/^\s*(?:import|export)\s[^'";]*?'(\.[^']+)'|import\('(\.[^']+)'\)/gm)) {
        const target = path.resolve(path.dirname(f), (m[1] ?? m[2])!);
        if (!target.startsWith(path.join(ROOT, 'src') + path.sep))
          out.push(`${rel(f)} -> ${path.relative(ROOT, target)}`);
      }
    }
    expect(out).toEqual([]);
  });

  it('keeps in src/shared/ only modules that more than one service imports at run time', () => {
    const services = ['src/pooler/', 'src/logstore/', 'src/launcher/', 'src/cli.ts', 'src/native/', 'src/config/'];
    const users = new Map<string, Set<string>>();
    for (const [file, deps] of graph) {
      const owner = services.find((s) => rel(file).startsWith(s));
      for (const dep of deps) {
        if (!rel(dep).startsWith('src/shared/') || !owner) continue;
        users.set(rel(dep), (users.get(rel(dep)) ?? new Set()).add(owner));
      }
    }
    const single = files(path.join(ROOT, 'src/shared'))
      .map(rel)
      .filter((f) => (users.get(f)?.size ?? 0) < 2);
    expect(single).toEqual([]);
  });
});
