// Index tokens of one value by field type: keyword (the whole value), text (words), path (every prefix).

const WORD_SPLIT = /[^\p{L}\p{N}_]+/u;

export function keywordToken(value: string, maxTokenSize: number): string {
  const v = value.length > maxTokenSize ? value.slice(0, maxTokenSize) : value;
  return v.toLowerCase();
}

/** Words (letters, digits, _) of a text value, lowercased (the same split is applied to query values). */
export function textTokens(value: string, maxTokenSize: number): string[] {
  const v = value.toLowerCase();
  const out: string[] = [];
  let start = -1;
  // ASCII fast path; any other character falls back to the Unicode-aware split.
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c >= 128) return unicodeWords(v, maxTokenSize);
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      out.push(i - start > maxTokenSize ? v.slice(start, start + maxTokenSize) : v.slice(start, i));
      start = -1;
    }
  }
  if (start >= 0) out.push(v.length - start > maxTokenSize ? v.slice(start, start + maxTokenSize) : v.slice(start));
  return out;
}

function unicodeWords(v: string, maxTokenSize: number): string[] {
  const out: string[] = [];
  for (const w of v.split(WORD_SPLIT)) if (w) out.push(w.length > maxTokenSize ? w.slice(0, maxTokenSize) : w);
  return out;
}

/** Every prefix of a path ("/a/b" -> "/a", "/a/b"), lowercased. */
export function pathTokens(value: string, maxTokenSize: number): string[] {
  const v = value.toLowerCase();
  const out: string[] = [];
  let i = v.indexOf('/', 1);
  while (i > 0) {
    out.push(v.slice(0, i));
    i = v.indexOf('/', i + 1);
  }
  if (v && !v.endsWith('/')) out.push(v);
  else if (v.length > 1) out.push(v.slice(0, -1));
  return out.map((t) => (t.length > maxTokenSize ? t.slice(0, maxTokenSize) : t));
}
