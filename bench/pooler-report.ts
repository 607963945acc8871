// Pooler benchmark report: medians of the repeated runs per scenario and target, as the Markdown of
// bench/results/pooler.md.
import type { PgbenchResult, Scenario } from './pooler-pgbench.js';

export const TARGETS = ['direct', 'PgBouncer', 'tidepool'] as const;
/** The field comparison (`--peers`): PgBouncer is Debian's 1.18; the others are built from their release tags. */
export const PEER_TARGETS = ['direct', 'PgBouncer', 'PgBouncer 1.25', 'Odyssey', 'pgagroal', 'tidepool'] as const;
export type TargetName = (typeof PEER_TARGETS)[number];

export interface RunRecord extends PgbenchResult {
  scenario: string;
  target: TargetName;
  repeat: number;
  /** Pooler CPU in percent of one core over the run; NaN for direct. */
  cpuPercent: number;
  /** Pooler CPU seconds over the run; NaN for direct. */
  cpuSeconds: number;
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
const ratio = (a: number, b: number) =>
  Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : '-';

/** How a target pools in a scenario: PgBouncer 1.18 keeps pgbench's named statements only in session mode. */
export function targetMode(target: TargetName, s: Scenario): 'direct' | 'transaction' | 'session' {
  if (target === 'direct') return 'direct';
  return target === 'PgBouncer' && s.protocol === 'prepared' ? 'session' : 'transaction';
}

/** Whether the bench runs a target in a scenario: pgagroal's transaction pipeline cannot keep prepared statements. */
export function targetRuns(target: TargetName, s: Scenario): boolean {
  return !(target === 'pgagroal' && (s.protocol === 'prepared' || (s.idle ?? 0) > 0));
}

const targetLabel = (target: TargetName, s: Scenario) =>
  targetMode(target, s) === 'session' ? `${target} (session mode)` : target;

export function scenarioTitle(s: Scenario): string {
  const who = s.idle
    ? `${s.clients} active of ${(s.clients + s.idle).toLocaleString('en-US')} clients`
    : `${s.clients} client${s.clients === 1 ? '' : 's'}`;
  return `${s.protocol}${s.tls ? ', client TLS' : ''}${s.reconnect ? ', -C (reconnect per transaction)' : ''}, ${who}${s.scram ? ', SCRAM-SHA-256' : s.md5 ? ', md5' : ''}`;
}

export function renderReport(ctx: ReportContext, scenarios: Scenario[], records: RunRecord[]): string {
  const sum = (key: string, t: TargetName) => summarize(records.filter((r) => r.scenario === key && r.target === t));
  const out: string[] = [];
  out.push('# Pooler benchmark', '');
  out.push(
    `pgbench select-only (\`-S\`) against PostgreSQL directly, PgBouncer and tidepool, alternating the three within every scenario. ${ctx.settings}`,
    '',
  );
  out.push(`Machine: ${ctx.machine}. Date: ${ctx.date}.`, '');
  out.push('## Summary', '');
  out.push(
    '| Scenario | direct tps | PgBouncer tps | tidepool tps | tidepool / PgBouncer | PgBouncer CPU | tidepool CPU | PgBouncer RSS | tidepool RSS | other load |',
  );
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const s of scenarios) {
    const d = sum(s.key, 'direct');
    const b = sum(s.key, 'PgBouncer');
    const t = sum(s.key, 'tidepool');
    const session = targetMode('PgBouncer', s) === 'session' ? ' (session mode)' : '';
    out.push(
      `| ${scenarioTitle(s)} | ${int(d.tps)} | ${int(b.tps)}${session} | ${int(t.tps)} | **${ratio(t.tps, b.tps)}** | ${pct(b.cpuPercent)} | ${pct(t.cpuPercent)} | ${mib(b.rssMax)} | ${mib(t.rssMax)} | ${cores(summarize(records.filter((r) => r.scenario === s.key)).foreignCores)} |`,
    );
  }
  out.push('');
  out.push(...renderTargets(scenarios, records));
  out.push(
    'tps: median over the repeats (pgbench "tps = ... (without initial connection time)"; with -C "(including reconnection times)"). CPU: user + system time of the pooler process from /proc/<pid>/stat over the pgbench run, in percent of one core (median over the repeats). RSS: peak VmRSS from /proc/<pid>/status sampled every 200 ms (max over the repeats). Other load: CPU taken during the runs by processes this benchmark did not start (busy time from /proc/stat minus the CPU of our own process tree: PostgreSQL, the poolers, pgbench), in cores, median over the runs; anything well above 0 means other work on the machine shared the cores with the run.',
    '',
  );
  for (const s of scenarios) {
    out.push(`## ${scenarioTitle(s)}`, '');
    out.push(
      '| Target | tps (median) | tps min-max | p50 ms | p99 ms | pooler CPU | pooler RSS | other load | runs ok |',
    );
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    const errors: string[] = [];
    const summaries = new Map<TargetName, Summary>();
    for (const target of TARGETS) {
      const x = sum(s.key, target);
      summaries.set(target, x);
      errors.push(...x.errors);
      out.push(
        `| ${targetLabel(target, s)} | ${int(x.tps)} | ${int(x.tpsMin)}-${int(x.tpsMax)} | ${ms(x.p50Ms)} | ${ms(x.p99Ms)} | ${pct(x.cpuPercent)} | ${mib(x.rssMax)} | ${cores(x.foreignCores)} | ${x.okRuns}/${x.runs} |`,
      );
    }
    out.push('');
    out.push(
      `tidepool / ${targetLabel('PgBouncer', s)} tps: **${ratio(summaries.get('tidepool')!.tps, summaries.get('PgBouncer')!.tps)}**; tidepool / direct: ${ratio(summaries.get('tidepool')!.tps, summaries.get('direct')!.tps)}.`,
      '',
    );
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

/** The prepared-statement targets (issue 9): tidepool `prepared` >= tidepool `simple`, tidepool `extended` >= 1.2x
 * PgBouncer `extended`, at every client count both scenarios ran; with tidepool's CPU per transaction. */
function renderTargets(scenarios: Scenario[], records: RunRecord[]): string[] {
  const find = (protocol: Scenario['protocol'], clients: number) =>
    scenarios.find((s) => s.protocol === protocol && s.clients === clients && !s.reconnect);
  const of = (s: Scenario, t: TargetName) => summarize(records.filter((r) => r.scenario === s.key && r.target === t));
  const usPerTx = (x: Summary) =>
    Number.isFinite(x.cpuPercent) && x.tps > 0 ? `${(((x.cpuPercent / 100) * 1e6) / x.tps).toFixed(1)} µs` : '-';
  const rows: string[] = [];
  const verdict = (r: number, goal: number) => (!Number.isFinite(r) ? '-' : r >= goal ? 'met' : '**missed**');
  for (const s of scenarios) {
    if (s.reconnect || s.protocol !== 'prepared') continue;
    const simple = find('simple', s.clients);
    if (!simple) continue;
    const p = of(s, 'tidepool');
    const q = of(simple, 'tidepool');
    const r = p.tps / q.tps;
    rows.push(
      `| tidepool prepared / tidepool simple >= 1.00 | ${s.clients} | ${int(p.tps)} / ${int(q.tps)} | **${ratio(p.tps, q.tps)}** | ${verdict(r, 1)} | ${usPerTx(p)} / ${usPerTx(q)} |`,
    );
  }
  for (const s of scenarios) {
    if (s.reconnect || s.protocol !== 'extended') continue;
    const t = of(s, 'tidepool');
    const b = of(s, 'PgBouncer');
    const r = t.tps / b.tps;
    rows.push(
      `| tidepool extended / PgBouncer extended >= 1.20 | ${s.clients} | ${int(t.tps)} / ${int(b.tps)} | **${ratio(t.tps, b.tps)}** | ${verdict(r, 1.2)} | ${usPerTx(t)} / ${usPerTx(b)} |`,
    );
  }
  if (!rows.length) return [];
  return [
    '## Prepared-statement targets',
    '',
    '| Target | clients | tps (medians) | ratio | | pooler CPU per transaction |',
    '|---|---:|---:|---:|---|---:|',
    ...rows,
    '',
    "Ratios of the medians above. Pooler CPU per transaction: the pooler's CPU over the run divided by its tps (median CPU% / median tps), first target / second. The third target (simple protocol not slower than before the prepared-statement work) is a same-run A/B of two revisions: `bench/pooler-ab.ts`, `bench/results/pooler-ab-prepared.md`.",
    '',
  ];
}

/** Peer names with their versions, for the field report's headers (e.g. `PgBouncer` -> `PgBouncer 1.18`). */
export type PeerLabels = Partial<Record<TargetName, string>>;

const usTx = (x: number) => (Number.isFinite(x) ? `${x.toFixed(1)} µs` : '-');

/** The field comparison: every target's tps, latency and pooler CPU per row, and tidepool / the best peer. */
export function renderPeersReport(
  ctx: ReportContext,
  scenarios: Scenario[],
  records: RunRecord[],
  labels: PeerLabels,
  section?: string,
): string {
  // The targets the run had (--targets may leave some out).
  const targets = PEER_TARGETS.filter((t) => records.length === 0 || records.some((r) => r.target === t));
  const peers = targets.filter((t) => t !== 'direct' && t !== 'tidepool');
  const label = (t: TargetName) => labels[t] ?? t;
  const of = (s: Scenario, t: TargetName) => records.filter((r) => r.scenario === s.key && r.target === t);
  const sum = (s: Scenario, t: TargetName) => summarize(of(s, t));
  /** Median pooler CPU per transaction over the ok runs: CPU seconds / transactions of each run. */
  const cpuPerTx = (s: Scenario, t: TargetName) =>
    median(
      of(s, t)
        .filter((r) => r.ok && r.transactions > 0)
        .map((r) => (r.cpuSeconds * 1e6) / r.transactions),
    );
  const cell = (s: Scenario, t: TargetName) => {
    if (!targetRuns(t, s)) return 'not run';
    const x = sum(s, t);
    if (x.runs === 0) return '-';
    if (x.okRuns === 0) return `**failed** (${x.runs}/${x.runs})`;
    const failed = x.runs - x.okRuns;
    return `${int(x.tps)}${targetMode(t, s) === 'session' ? ' (session)' : ''}${failed ? ` (**${failed} failed**)` : ''}`;
  };
  /** The best peer of a row: the highest median tps among the peers that ran it in transaction mode. */
  const best = (s: Scenario) => {
    let top: { t: TargetName; tps: number } | null = null;
    for (const t of peers) {
      if (!targetRuns(t, s) || targetMode(t, s) !== 'transaction') continue;
      const x = sum(s, t);
      if (x.okRuns === 0 || !Number.isFinite(x.tps)) continue;
      if (!top || x.tps > top.tps) top = { t, tps: x.tps };
    }
    return top;
  };
  const out: string[] = [];
  out.push(section ? `# Rows run apart (${ctx.date})` : '# Pooler benchmark: tidepool against the field', '');
  out.push(
    `pgbench select-only (\`-S\`) against PostgreSQL directly, ${peers.map(label).join(', ')} and tidepool, every target once a round in a rotated order. ${ctx.settings}`,
    '',
  );
  out.push(`Machine: ${ctx.machine}. Date: ${ctx.date}.`, '');
  out.push('## Summary (median tps)', '');
  out.push(`| Row | ${targets.map(label).join(' | ')} | best peer | tidepool / best peer |`);
  out.push(`|---|${targets.map(() => '---:').join('|')}|---|---:|`);
  for (const s of scenarios) {
    const b = best(s);
    const t = sum(s, 'tidepool');
    out.push(
      `| ${scenarioTitle(s)} | ${targets.map((x) => cell(s, x)).join(' | ')} | ${b ? label(b.t) : '-'} | **${b && t.okRuns ? ratio(t.tps, b.tps) : '-'}** |`,
    );
  }
  out.push('');
  out.push(
    '"not run": pgagroal\'s transaction pipeline cannot keep protocol-level prepared statements (and it does not run the rows with idle clients, see above). "(session)": PgBouncer 1.18 cannot keep them in transaction mode, so its `prepared` rows run in session mode (one server connection per client) and it is left out of "best peer" there. The best peer is the peer with the highest median tps in transaction mode; a target with a failed run (any `error` or `aborted` line from pgbench) is marked and its median is over its other runs; a target whose runs all failed has no tps.',
    '',
  );
  out.push('## Pooler CPU per transaction', '');
  out.push(
    `| Row | ${targets
      .filter((t) => t !== 'direct')
      .map(label)
      .join(' | ')} |`,
  );
  out.push(
    `|---|${targets
      .filter((t) => t !== 'direct')
      .map(() => '---:')
      .join('|')}|`,
  );
  for (const s of scenarios)
    out.push(
      `| ${scenarioTitle(s)} | ${targets
        .filter((t) => t !== 'direct')
        .map((t) => (targetRuns(t, s) ? usTx(cpuPerTx(s, t)) : 'not run'))
        .join(' | ')} |`,
    );
  out.push('');
  out.push(
    "The pooler's user + system CPU from /proc/<pid>/stat over each run divided by the transactions pgbench counted, median over the runs (pgagroal: its whole process tree, one process per client, living and reaped).",
    '',
  );
  const logins = scenarios.filter((s) => s.reconnect);
  if (logins.length) {
    const poolers = targets.filter((t) => t !== 'direct');
    out.push('## Pooler CPU per login (-C rows)', '');
    out.push(`| Row | ${poolers.map(label).join(' | ')} | tidepool / best peer |`);
    out.push(`|---|${poolers.map(() => '---:').join('|')}|---:|`);
    for (const s of logins) {
      const peerCpu = peers
        .filter((t) => targetRuns(t, s))
        .map((t) => cpuPerTx(s, t))
        .filter(Number.isFinite);
      const lowest = peerCpu.length ? Math.min(...peerCpu) : Number.NaN;
      out.push(
        `| ${scenarioTitle(s)} | ${poolers.map((t) => (targetRuns(t, s) ? usTx(cpuPerTx(s, t)) : 'not run')).join(' | ')} | **${ratio(cpuPerTx(s, 'tidepool'), lowest)}** |`,
      );
    }
    out.push('');
    out.push(
      "With -C every transaction is a connection: TCP accept, startup, authentication (and the pooler's server pick), one `SELECT`, Terminate. The pooler's CPU per transaction of those rows is its CPU per login. tidepool / best peer: tidepool's CPU per login over the lowest peer's (below 1 is less CPU).",
      '',
    );
  }
  for (const s of scenarios) {
    out.push(`## ${scenarioTitle(s)}`, '');
    out.push(
      '| Target | tps (median) | tps min-max | p50 ms | p99 ms | pooler CPU | CPU per transaction | pooler memory | other load | runs ok |',
    );
    out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const errors: string[] = [];
    for (const t of targets) {
      if (!targetRuns(t, s)) {
        out.push(`| ${label(t)} | not run | | | | | | | | |`);
        continue;
      }
      const x = sum(s, t);
      errors.push(
        ...of(s, t)
          .filter((r) => r.error)
          .map((r) => `${label(t)} run ${r.repeat + 1}: ${r.error}`),
      );
      const mode = targetMode(t, s) === 'session' ? ' (session mode)' : '';
      out.push(
        `| ${label(t)}${mode} | ${x.okRuns ? int(x.tps) : '**failed**'} | ${int(x.tpsMin)}-${int(x.tpsMax)} | ${ms(x.p50Ms)} | ${ms(x.p99Ms)} | ${pct(x.cpuPercent)} | ${usTx(cpuPerTx(s, t))} | ${mib(x.rssMax)} | ${cores(x.foreignCores)} | ${x.okRuns}/${x.runs} |`,
      );
    }
    out.push('');
    const b = best(s);
    const t = sum(s, 'tidepool');
    if (b && t.okRuns)
      out.push(
        `tidepool / ${label(b.t)} (best peer) tps: **${ratio(t.tps, b.tps)}**; tidepool / direct: ${ratio(t.tps, sum(s, 'direct').tps)}.`,
        '',
      );
    if (errors.length) {
      out.push('Failed runs (their tps is not reported):', '');
      for (const e of errors) out.push(`- ${e}`);
      out.push('');
    }
  }
  out.push(
    'tps: median over the ok runs (pgbench "tps = ... (without initial connection time)"; -C rows: "(including reconnection times)"). Latency p50/p99: per-transaction latencies from pgbench `--log`, median over the runs. Pooler CPU: percent of one core over the run. Pooler memory: peak VmRSS sampled every 200 ms (pgagroal: the summed PSS of its process tree every 2 s), max over the runs. Other load: CPU taken during the runs by processes this benchmark did not start, in cores, median over the runs.',
    '',
  );
  if (ctx.notes.length) {
    out.push('## Notes', '');
    for (const n of ctx.notes) out.push(`- ${n}`);
    out.push('');
  }
  out.push('## Commands and configurations', '', '```sh');
  out.push(...ctx.commands);
  out.push('```', '');
  return out.join('\n');
}
