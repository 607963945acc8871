// PostgreSQL's session parameter (GUC) names: what one looks like, and a comma-separated list of them.

/** A parameter name in lower case (a custom one has a dot: myapp.tenant). */
export const PARAM_NAME = /^[a-z_][a-z0-9_$]*(\.[a-z_][a-z0-9_$]*)*$/;

/** A comma-separated list as lower-case names; the parts that are not parameter names go to `bad`. */
export function parseParamList(text: string, bad: string[] = []): string[] {
  const out: string[] = [];
  for (const part of text.split(',')) {
    const n = part.trim().toLowerCase();
    if (n === '') continue;
    if (PARAM_NAME.test(n)) out.push(n);
    else bad.push(part.trim());
  }
  return out;
}
