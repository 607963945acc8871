// Pooler benchmark report: medians of the repeated runs per scenario and target, as the Markdown of
// bench/results/pooler.md.
import type { PgbenchResult, Scenario } from './pooler-pgbench.js';

export const TARGETS = ['direct', 'PgBouncer', 'tidepool'] as const;
export type TargetName = (typeof TARGETS)[number];

export interface RunRecord extends PgbenchResult {
  scenario: string;
  target: TargetName;
  repeat: number;
  /** Pooler CPU in percent of one core over the run; NaN for direct. */
  cpuPercent: number;
  /** Pooler peak RSS in bytes during the run; NaN for direct. */
  rssMax: number;
  /** CPU taken during the run by processes this benchmark did not start, in cores. */
  foreignCores: number;
}

export interface Summary {
  tps: number;
  tpsMin: number;
  tpsMax: number;
  p50Ms: number;
  p99Ms: number;
  cpuPercent: number;
  rssMax: number;
  foreignCores: number;
  runs: number;
  okRuns: number;
  errors: string[];
}

export interface ReportContext {
  date: string;
  machine: string;
  settings: string;
  commands: string[];
  notes: string[];
}

export function median(xs: number[]): number {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
}

export function summarize(records: RunRecord[]): Summary {
  const ok = records.filter((r) => r.ok);
  const tps = ok.map((r) => r.tps);
  return {
    tps: median(tps),
    tpsMin: tps.length ? Math.min(...tps) : Number.NaN,
    tpsMax: tps.length ? Math.max(...tps) : Number.NaN,
    p50Ms: median(ok.map((r) => r.p50Ms)),
    p99Ms: median(ok.map((r) => r.p99Ms)),
    cpuPercent: median(ok.map((r) => r.cpuPercent)),
    rssMax: Math.max(...records.map((r) => (Number.isFinite(r.rssMax) ? r.rssMax : 0))),
    foreignCores: median(records.map((r) => r.foreignCores)),
    runs: records.length,
    okRuns: ok.length,
    errors: records.filter((r) => r.error).map((r) => `${r.target} run ${r.repeat + 1}: ${r.error}`),
  };
}

const int = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 3 : 1) : '-');
const pct = (x: number) => (Number.isFinite(x) ? `${x.toFixed(0)}%` : '-');
const mib = (x: number) => (Number.isFinite(x) && x > 0 ? `${(x / 1048576).toFixed(0)} MiB` : '-');
const cores = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : '-');

export function scenarioTitle(s: Scenario): string {
  return `${s.protocol}${s.reconnect ? ', -C (reconnect per transaction)' : ''}, ${s.clients} client${s.clients === 1 ? '' : 's'}`;
}

export function renderReport(ctx: ReportContext, scenarios: Scenario[], records: RunRecord[]): string {
  const sum = (key: string, t: TargetName) => summarize(records.filter((r) => r.scenario === key && r.target === t));
  const out: string[] = [];
  out.push('# Pooler benchmark', '');
  out.push(`pgbench select-only (\`-S\`) against PostgreSQL directly, PgBouncer and tidepool, alternating the three within every scenario. ${ctx.settings}`, '');
  out.push(`Machine: ${ctx.machine}. Date: ${ctx.date}.`, '');
  out.push('## Summary', '');
  out.push('| Scenario | direct tps | PgBouncer tps | tidepool tps | tidepool / PgBouncer | PgBouncer CPU | tidepool CPU | PgBouncer RSS | tidepool RSS | other load |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const s of scenarios) {
    const d = sum(s.key, 'direct');
    const b = sum(s.key, 'PgBouncer');
    const t = sum(s.key, 'tidepool');
    out.push(`| ${scenarioTitle(s)} | ${int(d.tps)} | ${int(b.tps)} | ${int(t.tps)} | **${ratio(t.tps, b.tps)}** | ${pct(b.cpuPercent)} | ${pct(t.cpuPercent)} | ${mib(b.rssMax)} | ${mib(t.rssMax)} | ${cores(summarize(records.filter((r) => r.scenario === s.key)).foreignCores)} |`);
  }
  out.push('');
  out.push('tps: median over the repeats (pgbench "tps = ... (without initial connection time)"; with -C "(including reconnection times)"). CPU: user + system time of the pooler process from /proc/<pid>/stat over the pgbench run, in percent of one core (median over the repeats). RSS: peak VmRSS from /proc/<pid>/status sampled every 200 ms (max over the repeats). Other load: CPU taken during the runs by processes this benchmark did not start (busy time from /proc/stat minus the CPU of our own process tree: PostgreSQL, the poolers, pgbench), in cores, median over the runs; anything well above 0 means other work on the machine shared the cores with the run.', '');
  for (const s of scenarios) {
    out.push(`## ${scenarioTitle(s)}`, '');
    out.push('| Target | tps (median) | tps min-max | p50 ms | p99 ms | pooler CPU | pooler RSS | other load | runs ok |');
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    const errors: string[] = [];
    const summaries = new Map<TargetName, Summary>();
    for (const target of TARGETS) {
      const x = sum(s.key, target);
      summaries.set(target, x);
      errors.push(...x.errors);
      out.push(`| ${target} | ${int(x.tps)} | ${int(x.tpsMin)}-${int(x.tpsMax)} | ${ms(x.p50Ms)} | ${ms(x.p99Ms)} | ${pct(x.cpuPercent)} | ${mib(x.rssMax)} | ${cores(x.foreignCores)} | ${x.okRuns}/${x.runs} |`);
    }
    out.push('');
    out.push(`tidepool / PgBouncer tps: **${ratio(summaries.get('tidepool')!.tps, summaries.get('PgBouncer')!.tps)}**; tidepool / direct: ${ratio(summaries.get('tidepool')!.tps, summaries.get('direct')!.tps)}.`, '');
    if (errors.length) {
      out.push('Errors:', '');
      for (const e of errors) out.push(`- ${e}`);
      out.push('');
    }
  }
  if (ctx.notes.length) {
    out.push('## Notes', '');
    for (const n of ctx.notes) out.push(`- ${n}`);
    out.push('');
  }
  out.push('## Commands', '', '```sh');
  out.push(...ctx.commands);
  out.push('```', '');
  return out.join('\n');
}
