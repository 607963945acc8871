// Overview: client and server totals, rates, errors, paused pools, the process, and charts of the last 15 minutes.
import { Card } from '../components/card';
import { Chart } from '../components/chart';
import { Gate } from '../components/states';
import { OutageBanner, outagesOf } from '../components/outage';
import { errorsPerSec, latest, series, useHistory } from '../history';
import { count, micros, microsTicks, millis, rate, seconds } from '../format';
import { usePolling } from '../use-polling';
import { IdleXactLine, idleXact, running } from '../components/idle-xact';

interface ProcessInfo {
  pid: number;
  version: string;
  uptime_seconds: number;
  rss_bytes: number;
  heap_used_bytes: number;
  cpu_percent: number;
  event_loop_delay_ms: { mean: number; p99: number; max: number };
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

export function OverviewPage() {
  const history = useHistory();
  const proc = usePolling<ProcessInfo>('/api/process');
  const samples = history.samples;
  const data = latest(history)?.overview ?? null;
  const x = samples.map((s) => s.t);
  const o = (pick: (ov: NonNullable<typeof data>) => number | undefined) =>
    series(samples, (s) => (s.overview ? pick(s.overview) : null));
  const waiting = (ov: NonNullable<typeof data>) => ov.cl_waiting ?? ov.clients['waiting'];
  // Idle in transaction is counted in active by the pooler: shown apart here, so the parts add up to the total.
  const clIdleXact = (ov: NonNullable<typeof data>) => idleXact(ov.clients['idle_in_transaction']);
  const svIdleXact = (ov: NonNullable<typeof data>) => idleXact(ov.servers['idle_in_transaction']);
  const svActive = (ov: NonNullable<typeof data>) => ov.sv_active ?? ov.servers['active'];
  const lastErrors = samples.length ? errorsPerSec(samples.at(-1)!, samples.at(-2) ?? null) : null;
  const hasLatency = samples.some((s) => s.overview?.query_p50_us !== undefined);
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <OutageBanner outages={outagesOf(history)} testId="overview-outage" />
      <Gate loading={!data} error={history.error} hasData={data !== null} what="the overview">
        {() => (
          <>
            <div className="cards" data-testid="overview-cards">
              <Card
                label="Clients"
                help="clients"
                testId="overview-clients"
                value={count(data!.clients['total'])}
                tone={clIdleXact(data!) ? 'warn' : null}
                detail={
                  <>
                    {`${running(data!.clients['active'], clIdleXact(data!))} active · ${data!.clients['idle'] ?? 0} idle · ${waiting(data!) ?? 0} waiting`}
                    <IdleXactLine
                      n={clIdleXact(data!)}
                      oldestMs={data!.max_idle_xact_age_ms}
                      testId="overview-clients-idle-xact"
                    />
                  </>
                }
              />
              <Card
                label="Servers"
                help="servers"
                testId="overview-servers"
                value={count(data!.servers['total'])}
                tone={svIdleXact(data!) ? 'warn' : null}
                detail={
                  <>
                    {`${running(svActive(data!), svIdleXact(data!))} active · ${data!.sv_idle ?? data!.servers['idle'] ?? 0} idle · ${data!.sv_used ?? data!.servers['used'] ?? 0} used · ${data!.sv_login ?? data!.servers['login'] ?? 0} login`}
                    <IdleXactLine
                      n={svIdleXact(data!)}
                      oldestMs={data!.max_idle_xact_age_ms}
                      testId="overview-servers-idle-xact"
                    />
                  </>
                }
              />
              <Card label="Transactions/s" help="tps" value={rate(data!.tps)} />
              <Card
                label="Queries/s"
                help="qps"
                value={rate(data!.qps)}
                detail={data!.query_p95_us !== undefined ? `p95 ${micros(data!.query_p95_us)}` : undefined}
              />
              <Card
                label="Errors"
                help="errors"
                value={count(data!.errors)}
                detail={`${rate(lastErrors)} /s`}
                tone={lastErrors ? 'bad' : null}
              />
              <Card
                label="Pools"
                help="pools"
                value={count(data!.pools)}
                detail={`${data!.pools_paused} paused`}
                tone={data!.pools_paused ? 'warn' : null}
              />
            </div>
            <div className="charts" data-testid="overview-charts">
              <Chart
                testId="chart-rates"
                title="Transactions and queries per second"
                help="tps"
                x={x}
                series={[
                  { label: 'tps', values: o((ov) => ov.tps), color: '--series-1' },
                  { label: 'qps', values: o((ov) => ov.qps), color: '--series-2' },
                ]}
              />
              <Chart
                testId="chart-latency"
                title="Query latency"
                help="latency"
                x={x}
                format={micros}
                ticks={microsTicks}
                emptyText={
                  hasLatency
                    ? undefined
                    : 'The pooler does not report latency percentiles yet (query_p50_us, query_p95_us, query_p99_us of /api/overview).'
                }
                series={[
                  { label: 'p50', values: o((ov) => ov.query_p50_us), color: '--series-1' },
                  { label: 'p95', values: o((ov) => ov.query_p95_us), color: '--series-3' },
                  { label: 'p99', values: o((ov) => ov.query_p99_us), color: '--series-4' },
                ]}
              />
              <Chart
                testId="chart-waiting"
                title="Waiting clients"
                help="waiting"
                x={x}
                series={[{ label: 'waiting', values: o(waiting), color: '--series-3' }]}
              />
              <Chart
                testId="chart-errors"
                title="Errors per second"
                help="errors_per_sec"
                x={x}
                series={[{ label: 'errors/s', values: series(samples, errorsPerSec), color: '--series-4' }]}
              />
              <Chart
                testId="chart-servers"
                title="Server connections by state"
                help="servers"
                x={x}
                series={[
                  { label: 'active', values: o((ov) => running(svActive(ov), svIdleXact(ov))), color: '--series-1' },
                  { label: 'idle', values: o((ov) => ov.sv_idle ?? ov.servers['idle']), color: '--series-2' },
                  { label: 'used', values: o((ov) => ov.sv_used ?? ov.servers['used']), color: '--series-3' },
                  { label: 'login', values: o((ov) => ov.sv_login ?? ov.servers['login']), color: '--series-4' },
                  {
                    label: 'idle in transaction',
                    values: o((ov) => ov.servers['idle_in_transaction']),
                    color: '--warn',
                  },
                ]}
              />
            </div>
          </>
        )}
      </Gate>
      {proc.data && (
        <div className="cards" data-testid="process-cards">
          <Card
            label="Process"
            help="process"
            value={`pid ${proc.data.pid}`}
            detail={`tidepool ${proc.data.version} · up ${seconds(proc.data.uptime_seconds)}`}
          />
          <Card
            label="Memory"
            help="memory"
            value={mb(proc.data.rss_bytes)}
            detail={`heap ${mb(proc.data.heap_used_bytes)}`}
          />
          <Card
            label="CPU"
            help="cpu"
            value={`${proc.data.cpu_percent}%`}
            detail={`event loop p99 ${millis(proc.data.event_loop_delay_ms.p99)}`}
          />
        </div>
      )}
    </section>
  );
}
