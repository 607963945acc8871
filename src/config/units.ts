// Typed units in config files: durations ("250ms", "5s", "10m", "1h", bare ms) and sizes ("256MB").

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1024,
  k: 1024,
  kib: 1024,
  mb: 1024 ** 2,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  gb: 1024 ** 3,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/** Milliseconds from a duration value, or null when it does not parse. */
export function parseDuration(v: unknown): number | null {
  if (typeof v === 'number' || typeof v === 'bigint') {
    const n = Number(v);
    return Number.isFinite(n) && n >= 0 ? n : null;
  }
  if (typeof v !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(v);
  if (!m) return null;
  return Math.round(Number(m[1]) * DURATION_UNITS[(m[2] ?? 'ms').toLowerCase()]!);
}

/** Bytes from a size value ("256MB", "1GiB", bare bytes), or null when it does not parse. */
export function parseSize(v: unknown): number | null {
  if (typeof v === 'number' || typeof v === 'bigint') {
    const n = Number(v);
    return Number.isFinite(n) && n >= 0 ? Math.floor(n) : null;
  }
  if (typeof v !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)?\s*$/i.exec(v);
  if (!m) return null;
  const unit = SIZE_UNITS[(m[2] ?? 'b').toLowerCase()];
  return unit === undefined ? null : Math.floor(Number(m[1]) * unit);
}
