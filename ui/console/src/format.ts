// Number formatting of the console: counts, rates, bytes, durations (µs), percentages; blanks for missing values.
export type Cell = string | number | boolean | null | undefined;

export const MISSING = '–';

export function num(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}

export function count(v: unknown): string {
  const n = num(v);
  return n === null ? MISSING : Math.round(n).toLocaleString('en-US');
}

export function rate(v: unknown): string {
  const n = num(v);
  if (n === null) return MISSING;
  if (n >= 100) return Math.round(n).toLocaleString('en-US');
  return n.toFixed(1);
}

export function bytes(v: unknown): string {
  const n = num(v);
  if (n === null) return MISSING;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let x = n;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${i === 0 ? x : x.toFixed(1)} ${units[i]}`;
}

/** Microseconds as µs, ms or s. */
export function micros(v: unknown): string {
  const n = num(v);
  if (n === null) return MISSING;
  if (n < 1000) return `${Math.round(n)} µs`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} ms`;
  return `${(n / 1_000_000).toFixed(2)} s`;
}

export function seconds(v: unknown): string {
  const n = num(v);
  if (n === null) return MISSING;
  if (n < 120) return `${Math.round(n)} s`;
  if (n < 7200) return `${Math.floor(n / 60)} min`;
  return `${(n / 3600).toFixed(1)} h`;
}

export function percent(v: number | null): string {
  return v === null || !Number.isFinite(v) ? MISSING : `${Math.round(v * 100)}%`;
}

export function cell(v: Cell): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return String(v);
}
