// A YAML config file's top-level mapping, or the one problem that says why it is not one (syntax error with its position, or a list or scalar).
import { parse as parseYaml } from 'yaml';
import type { Problem } from './schema.js';

/** The parsed mapping (an empty file is `{}`), or a problem; `sections` names what the mapping should hold. */
export function readYamlMapping(
  text: string,
  sections: string,
): { raw: Record<string, unknown> } | { problem: Problem } {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    const e = err as Error & { linePos?: { line: number; col: number }[] };
    const at = e.linePos?.[0];
    return {
      problem: {
        path: at ? `line ${at.line}, column ${at.col}` : '(file)',
        expected: 'valid YAML',
        found: e.message.split('\n')[0] ?? 'a syntax error',
      },
    };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return {
      problem: {
        path: '(file)',
        expected: `a YAML mapping of sections (${sections})`,
        found: Array.isArray(raw) ? 'a list' : String(raw),
      },
    };
  }
  return { raw: raw as Record<string, unknown> };
}
