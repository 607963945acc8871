// SHOW tables as JSON: row objects keyed by the SHOW column names, bigints made JSON-safe, secrets masked.
import type { Cell, ShowTable } from '../control.js';

export type Row = Record<string, string | number | boolean | null>;

function jsonCell(v: Cell | undefined): string | number | boolean | null {
  if (v === undefined) return null;
  if (typeof v === 'bigint')
    return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
  return v;
}

export function toRows(table: ShowTable): Row[] {
  return table.rows.map((r) => {
    const row: Row = {};
    table.columns.forEach((c, i) => {
      row[c] = jsonCell(r[i]);
    });
    return row;
  });
}

/** SHOW CONFIG rows with the values of secret keys (passwords) replaced. */
export function maskConfigRows(rows: Row[]): Row[] {
  return rows.map((r) => {
    const key = String(r['key'] ?? '');
    if (!/password|secret|token/i.test(key)) return r;
    const masked: Row = { ...r };
    for (const col of ['value', 'default'])
      if (masked[col] !== null && masked[col] !== '' && col in masked) masked[col] = '********';
    return masked;
  });
}

export function numberOf(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v);
  return 0;
}
