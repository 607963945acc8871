// Time ranges of the view: relative ("15m" back from now) or absolute (two instants), shown in UTC.
export interface Range {
  rel: string | null;
  from: string;
  to: string;
}

export const RELATIVE = [
  ['15m', 'Last 15 minutes'],
  ['1h', 'Last hour'],
  ['24h', 'Last 24 hours'],
  ['7d', 'Last 7 days'],
] as const;

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function relMs(rel: string): number | null {
  const m = /^(\d+)([smhd])$/.exec(rel.trim());
  return m ? Number(m[1]) * UNITS[m[2]!]! : null;
}

/** The instants of a range now: a relative one ends at the current time. */
export function resolve(r: Range, now = Date.now()): { from: string; to: string } {
  if (r.rel) {
    const ms = relMs(r.rel) ?? 900_000;
    return { from: new Date(now - ms).toISOString(), to: new Date(now).toISOString() };
  }
  return { from: r.from, to: r.to };
}

/** A histogram bucket width giving about 60-120 bars over the span. */
export function bucketFor(spanMs: number): string {
  const steps: [number, string][] = [
    [1000, '1s'],
    [5000, '5s'],
    [10_000, '10s'],
    [30_000, '30s'],
    [60_000, '1m'],
    [300_000, '5m'],
    [600_000, '10m'],
    [1_800_000, '30m'],
    [3_600_000, '1h'],
    [10_800_000, '3h'],
    [21_600_000, '6h'],
    [43_200_000, '12h'],
    [86_400_000, '1d'],
  ];
  for (const [ms, name] of steps) if (spanMs / ms <= 120) return name;
  return '1d';
}

export function utc(iso: string): string {
  return iso.replace('T', ' ').replace('Z', '');
}

/** "2026-03-01 12:00:00" or "2026-03-01T12:00" (UTC, seconds optional) as an ISO instant; null when it does not parse. */
export function parseUtc(text: string): string | null {
  const m = /^\s*(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})(:\d{2}(\.\d{1,3})?)?\s*(Z|UTC)?\s*$/i.exec(text);
  if (!m) return null;
  const t = Date.parse(`${m[1]}T${m[2]}${m[3] ?? ':00'}Z`);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

export function describe(r: Range): string {
  if (r.rel) return RELATIVE.find(([k]) => k === r.rel)?.[1] ?? `Last ${r.rel}`;
  return `${utc(r.from).slice(0, 19)} → ${utc(r.to).slice(0, 19)} UTC`;
}
