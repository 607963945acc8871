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

/** Three significant digits at most, trailing zeros dropped ("8.7", "12.3", "45"). */
function short(x: number): string {
  return String(Number(x.toFixed(x < 10 ? 2 : x < 100 ? 1 : 0)));
}

/**
 * A duration in seconds with its unit, the one duration formatter of the console: "250 µs", "8.70 ms",
 * "19.6 ms", "8.7 s", "45 s", "30 min 16 s", "2 h 5 min", "3 d 4 h". Under a second it keeps three digits
 * (zeros included, so a column of milliseconds lines up); from a minute on it counts whole units.
 */
export function duration(s: number): string {
  if (!Number.isFinite(s)) return MISSING;
  if (s < 0) return `-${duration(-s)}`;
  if (s < 0.001) return `${Math.round(s * 1e6)} µs`;
  if (s < 1) {
    const ms = s * 1000;
    return `${ms.toFixed(ms < 10 ? 2 : ms < 100 ? 1 : 0)} ms`;
  }
  if (s < 59.5) return `${short(s)} s`;
  const whole = Math.round(s);
  if (whole < 3600) return whole % 60 ? `${Math.floor(whole / 60)} min ${whole % 60} s` : `${whole / 60} min`;
  const minutes = Math.round(s / 60);
  if (minutes < 1440) return minutes % 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes / 60} h`;
  const hours = Math.round(s / 3600);
  return hours % 24 ? `${Math.floor(hours / 24)} d ${hours % 24} h` : `${hours / 24} d`;
}

/** Microseconds (SHOW STATS times, `*_us` fields). */
export function micros(v: unknown): string {
  const n = num(v);
  return n === null ? MISSING : duration(n / 1e6);
}

/** Milliseconds (`*_ms` fields). */
export function millis(v: unknown): string {
  const n = num(v);
  return n === null ? MISSING : duration(n / 1000);
}

/** Seconds (`*_seconds` fields, SHOW's `wait`, uptime). */
export function seconds(v: unknown): string {
  const n = num(v);
  return n === null ? MISSING : duration(n);
}

/** How a field is formatted by its name: durations and sizes get units, other numbers a thousands separator; null
 * for a field that is not a number of a known kind. SHOW STATS' avg_/total_*_time are microseconds (PgBouncer). */
export function unitOf(key: string): ((v: unknown) => string) | null {
  if (/_us$|^(avg|total)_(xact|query|wait)_time$/.test(key)) return micros;
  if (/_ms$/.test(key)) return millis;
  if (/_seconds$|^maxwait$|^wait$/.test(key)) return seconds;
  if (/(^|_)bytes($|_)|^(avg|total)_(recv|sent|received)$/.test(key)) return bytes;
  return null;
}

/** Decimals that write the step between ticks exactly (5 -> 0, 2.5 -> 1, 0.25 -> 2), at most 3. */
function decimalsFor(step: number): number {
  if (!(step > 0)) return 0;
  for (let d = 0; d < 3; d++) {
    const x = step * 10 ** d;
    if (Math.abs(x - Math.round(x)) < 1e-6 * Math.max(1, x)) return d;
  }
  return 3;
}

function stepOf(vals: readonly number[]): number {
  let step = Infinity;
  for (let i = 1; i < vals.length; i++) step = Math.min(step, Math.abs(vals[i]! - vals[i - 1]!));
  return Number.isFinite(step) ? step : Math.abs(vals[0] ?? 0);
}

/** Axis labels of plain numbers: as many decimals as the step between ticks needs, the same for every tick. */
export function numberTicks(vals: readonly number[]): string[] {
  const d = decimalsFor(stepOf(vals));
  return vals.map((v) =>
    v === 0 ? '0' : v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }),
  );
}

/** Axis labels of durations in microseconds: one unit for every tick (the largest tick's), as many decimals as the
 * step needs: "0 ms", "5 ms", "10 ms" or "0.25 s", "0.50 s". */
export function microsTicks(vals: readonly number[]): string[] {
  const top = Math.max(0, ...vals.map((v) => Math.abs(v)));
  const [div, unit] = top >= 1e6 ? [1e6, 's'] : top >= 1e3 ? [1e3, 'ms'] : [1, 'µs'];
  const d = decimalsFor(stepOf(vals) / div);
  return vals.map((v) => `${v === 0 ? '0' : (v / div).toFixed(d)} ${unit}`);
}

export function percent(v: number | null): string {
  return v === null || !Number.isFinite(v) ? MISSING : `${Math.round(v * 100)}%`;
}

export function cell(v: Cell): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return String(v);
}
