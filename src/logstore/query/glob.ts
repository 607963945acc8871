// Matching of `*`-only wildcard patterns against tokens without backtracking: O(token x pattern) at worst.
// (A RegExp `^a.*b.*c$` backtracks: 20 stars against a 72-character token ran for minutes on one thread.)

/** A pattern ready to test tokens: its literal segments, with a `*` between each two. */
export interface Glob {
  readonly first: string;
  /** Non-empty segments between the first and the last (empty ones are adjacent stars, which change nothing). */
  readonly middle: readonly string[];
  readonly last: string;
  /** The least token length that can match: the literal characters, which no star can supply. */
  readonly minLength: number;
}

/** `segments` as in Pattern: one segment is an exact value, n segments hold n - 1 stars between them. */
export function compileGlob(segments: readonly string[]): Glob {
  if (segments.length === 0) throw new RangeError('a pattern has at least one segment');
  if (segments.length === 1) return { first: segments[0]!, middle: [], last: '', minLength: -1 };
  const first = segments[0]!;
  const last = segments[segments.length - 1]!;
  const middle = segments.slice(1, -1).filter((s) => s !== '');
  let minLength = first.length + last.length;
  for (const s of middle) minLength += s.length;
  return { first, middle, last, minLength };
}

/**
 * Whether `token` matches whole. The first and last segments are anchored; each middle segment is taken at its
 * leftmost place after the previous one. Leftmost is always safe with `*` as the only wildcard: a later place
 * leaves less room for what follows, never more, so no choice is ever revisited.
 */
export function globMatches(g: Glob, token: string): boolean {
  if (g.minLength < 0) return token === g.first;
  if (token.length < g.minLength) return false;
  if (!token.startsWith(g.first) || !token.endsWith(g.last)) return false;
  let at = g.first.length;
  const end = token.length - g.last.length;
  for (const s of g.middle) {
    const i = token.indexOf(s, at);
    if (i < 0 || i + s.length > end) return false;
    at = i + s.length;
  }
  return true;
}
