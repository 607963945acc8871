// One SHOW result as the admin console, the web API and auth_query's cache give it (control.ts re-exports it).
export type Cell = string | number | bigint | boolean | null;

/** One SHOW result: column names as in reference/pooler.md, rows in column order. */
export interface ShowTable {
  readonly columns: readonly string[];
  readonly rows: readonly (readonly Cell[])[];
}
