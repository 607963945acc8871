// Elasticsearch response filtering (`?filter_path=`): dotted paths with `*` globs and `**`, `-` for exclusion.
// As Elasticsearch: arrays are transparent (a path names object fields only), includes apply first, then
// excludes; an object or array left empty by filtering is dropped, and a root left empty is `{}`.

/** Whether glob `pattern` (only `*` is special) matches `name` whole. */
function globMatch(pattern: string, name: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === name;
  if (!name.startsWith(pattern.slice(0, star))) return false;
  const parts = pattern.slice(star + 1).split('*');
  const last = parts.pop()!;
  let at = star;
  for (const p of parts) {
    if (p === '') continue;
    const i = name.indexOf(p, at);
    if (i < 0) return false;
    at = i + p.length;
  }
  return name.length - at >= last.length && name.endsWith(last);
}

/** A set of paths, each with the position of the segment its next field name must match. */
export class PathSet {
  private readonly memo = new Map<string, PathStep>();

  constructor(
    private readonly paths: readonly (readonly string[])[],
    private readonly at: readonly number[],
  ) {}

  static of(paths: string[][]): PathSet | null {
    return paths.length
      ? new PathSet(
          paths,
          paths.map(() => 0),
        )
      : null;
  }

  /** What field `name` is: matched by a whole path, not matched, or matched so far (the set for its children). */
  step(name: string): PathStep {
    const known = this.memo.get(name);
    if (known !== undefined) return known;
    const nextPaths: (readonly string[])[] = [];
    const nextAt: number[] = [];
    const add = (p: readonly string[], i: number) => {
      for (let k = 0; k < nextPaths.length; k++) if (nextPaths[k] === p && nextAt[k] === i) return;
      nextPaths.push(p);
      nextAt.push(i);
    };
    let result: PathStep = null;
    const visit = (p: readonly string[], i: number): boolean => {
      const seg = p[i]!;
      if (seg === '**') {
        if (i === p.length - 1) return true;
        add(p, i);
        return visit(p, i + 1);
      }
      if (!globMatch(seg, name)) return false;
      if (i === p.length - 1) return true;
      add(p, i + 1);
      return false;
    };
    for (let k = 0; k < this.paths.length; k++) {
      if (visit(this.paths[k]!, this.at[k]!)) {
        result = true;
        break;
      }
    }
    if (result === null && nextPaths.length) result = new PathSet(nextPaths, nextAt);
    if (this.memo.size < 1024) this.memo.set(name, result);
    return result;
  }
}

/** true: the field matches a whole path; null: it matches none; a set: the paths its children must match. */
export type PathStep = true | null | PathSet;

/** A parsed `filter_path`: include paths and exclude (`-`) paths. */
export interface FilterPath {
  include: PathSet | null;
  exclude: PathSet | null;
}

/** Parses `filter_path` (comma-separated); null when it filters nothing (absent or empty). */
export function parseFilterPath(value: string | null | undefined): FilterPath | null {
  if (!value) return null;
  const inc: string[][] = [];
  const exc: string[][] = [];
  for (const raw of value.split(',')) {
    const t = raw.trim();
    if (!t) continue;
    const neg = t.startsWith('-');
    const segs = (neg ? t.slice(1) : t).split('.').filter((s) => s !== '');
    if (!segs.length) continue;
    (neg ? exc : inc).push(segs);
  }
  if (!inc.length && !exc.length) return null;
  return { include: PathSet.of(inc), exclude: PathSet.of(exc) };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The part of `v` the include paths select (undefined: nothing). */
function includeValue(v: unknown, set: PathSet): unknown {
  if (Array.isArray(v)) {
    const out = v.map((e) => includeValue(e, set)).filter((e) => e !== undefined);
    return out.length ? out : undefined;
  }
  if (!isObject(v)) return undefined;
  const out: Record<string, unknown> = {};
  let any = false;
  for (const [k, child] of Object.entries(v)) {
    const s = set.step(k);
    if (s === null) continue;
    const r = s === true ? child : includeValue(child, s);
    if (r === undefined) continue;
    out[k] = r;
    any = true;
  }
  return any ? out : undefined;
}

/** `v` without what the exclude paths name (undefined: an object or array emptied by the filter). */
function excludeValue(v: unknown, set: PathSet, inArray = false): unknown {
  if (Array.isArray(v)) {
    if (v.length === 0) return v;
    const out = v.map((e) => excludeValue(e, set, true)).filter((e) => e !== undefined);
    return out.length ? out : undefined;
  }
  if (!isObject(v)) return v;
  const keys = Object.keys(v);
  if (keys.length === 0) return inArray ? undefined : v;
  const out: Record<string, unknown> = {};
  let any = false;
  for (const k of keys) {
    const s = set.step(k);
    if (s === true) continue;
    const r = s === null ? v[k] : excludeValue(v[k], s);
    if (r === undefined) continue;
    out[k] = r;
    any = true;
  }
  return any ? out : undefined;
}

/** Applies a filter to a value below the root: undefined when nothing of it is left. */
export function filterPart(v: unknown, f: FilterPath): unknown {
  let out: unknown = v;
  if (f.include) out = includeValue(out, f.include);
  if (out !== undefined && f.exclude) out = excludeValue(out, f.exclude);
  return out;
}

/** Applies a filter to a whole JSON value (a response object): what Elasticsearch would send. */
export function filterValue(v: unknown, f: FilterPath): unknown {
  return filterPart(v, f) ?? {};
}

/**
 * The verdict for one field reached by `names` from the root: kept whole, dropped, or kept in part (then
 * `filterValue` with the returned filter gives the part). The bulk writer asks this once per item shape.
 */
export function fieldVerdict(f: FilterPath, names: readonly string[]): 'keep' | 'drop' | FilterPath {
  let inc: PathStep | undefined = f.include ?? undefined;
  let exc: PathStep | undefined = f.exclude ?? undefined;
  for (const n of names) {
    if (inc instanceof PathSet) inc = inc.step(n);
    if (inc === null) return 'drop';
    if (exc instanceof PathSet) exc = exc.step(n);
    if (exc === true) return 'drop';
  }
  const incPart = inc instanceof PathSet ? inc : null;
  const excPart = exc instanceof PathSet ? exc : null;
  if (!incPart && !excPart) return 'keep';
  return { include: incPart, exclude: excPart };
}
