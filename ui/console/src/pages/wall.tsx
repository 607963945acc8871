// Wall (/wall): a big-screen incident view with no sidebar: tps, waiting clients, errors/s, the worst pools, the last admin events.
import { Chart } from '../components/chart';
import { Meter, saturation } from '../components/meter';
import { eventLogsHref, useExplorerUrl } from '../explorer-links';
import { errorsPerSec, latest, poolKey, poolP95, poolRow, series, useHistory } from '../history';
import { count, micros, rate } from '../format';
import { linkProps } from '../router';
import { usePolling } from '../use-polling';
import { OutageBanner, outagesOf, poolUnreachable } from '../components/outage';

export interface AdminEvent {
  time: string;
  kind: string;
  pool: string | null;
  message: string;
}

/** Percentiles of 0 mean no query in the window: shown as a dash, not as "0 µs". */
const WORST = 6;
const EVENTS = 8;
/** Chart labels read from 3 m: 20 px (the console's 12 px could not be). */
const CHART_FONT = 20;
const CHART_HEIGHT = 220;

type Tone = 'ok' | 'warn' | 'bad' | null;

/** p95 under 100 ms is fine, under a second a warning, above it bad. */
function latencyTone(us: number | undefined): Tone {
  if (!us) return null;
  return us < 100_000 ? 'ok' : us < 1_000_000 ? 'warn' : 'bad';
}

export function WallPage() {
  const history = useHistory();
  const events = usePolling<AdminEvent[]>('/api/events');
  const explorer = useExplorerUrl();
  const s = latest(history);
  const ov = s?.overview ?? null;
  const samples = history.samples;
  const x = samples.map((v) => v.t);
  const errs = samples.length ? errorsPerSec(samples.at(-1)!, samples.at(-2) ?? null) : null;
  const waiting = ov ? (ov.cl_waiting ?? ov.clients['waiting'] ?? 0) : null;
  const pools = [...(s?.pools ?? [])]
    .map((r) => ({
      r,
      sat: saturation(r) ?? 0,
      p95: poolP95(s, poolKey(r)),
      stat: poolRow(s?.stats ?? null, poolKey(r)),
    }))
    .sort(
      (a, b) =>
        Number(poolUnreachable(b.r)) - Number(poolUnreachable(a.r)) ||
        b.sat - a.sat ||
        (b.p95 ?? 0) - (a.p95 ?? 0) ||
        Number(b.r['cl_waiting']) - Number(a.r['cl_waiting']),
    )
    .slice(0, WORST);
  const hasP95 = pools.some((p) => p.p95 !== null);
  return (
    <section className="wall" aria-labelledby="wall-title">
      <header className="wall-head">
        <h1 id="wall-title">tidepool</h1>
        <span className="wall-clock" data-live="">
          {new Date((s?.t ?? Date.now() / 1000) * 1000).toLocaleTimeString('en-GB')}
        </span>
        <a className="wall-exit" {...linkProps('/overview')}>
          exit wall
        </a>
      </header>
      <OutageBanner outages={outagesOf(history)} testId="wall-outage" big />
      <div className="wall-big" data-testid="wall-numbers">
        <BigNumber testId="wall-tps" label="Transactions/s" value={ov ? rate(ov.tps) : '–'} />
        <BigNumber
          testId="wall-waiting"
          label="Waiting clients"
          value={waiting === null ? '–' : count(waiting)}
          tone={waiting === null ? null : waiting > 0 ? 'bad' : 'ok'}
        />
        <BigNumber
          testId="wall-errors"
          label="Errors/s"
          value={rate(errs)}
          tone={errs === null ? null : errs > 0 ? 'bad' : 'ok'}
        />
        <BigNumber
          testId="wall-p95"
          label="Query p95"
          value={ov?.query_p95_us ? micros(ov.query_p95_us) : '–'}
          tone={latencyTone(ov?.query_p95_us)}
        />
      </div>
      <div className="wall-charts">
        <Chart
          testId="wall-chart-tps"
          title="Transactions/s"
          x={x}
          height={CHART_HEIGHT}
          fontSize={CHART_FONT}
          series={[{ label: 'tps', values: series(samples, (v) => v.overview?.tps), color: '--series-1' }]}
        />
        <Chart
          testId="wall-chart-waiting"
          title="Waiting clients"
          x={x}
          height={CHART_HEIGHT}
          fontSize={CHART_FONT}
          series={[
            {
              label: 'waiting',
              values: series(samples, (v) =>
                v.overview ? (v.overview.cl_waiting ?? v.overview.clients['waiting']) : null,
              ),
              color: '--series-3',
            },
          ]}
        />
        <Chart
          testId="wall-chart-errors"
          title="Errors/s"
          x={x}
          height={CHART_HEIGHT}
          fontSize={CHART_FONT}
          series={[{ label: 'errors/s', values: series(samples, errorsPerSec), color: '--series-4' }]}
        />
      </div>
      <div className="wall-lower">
        <div className="wall-panel">
          <h2>Busiest pools</h2>
          {pools.length === 0 ? (
            <p className="muted">No pools.</p>
          ) : (
            <div className="table-scroll">
              <table data-testid="wall-pools">
                <caption className="sr-only">Pools by saturation, then p95</caption>
                <thead>
                  <tr>
                    <th scope="col">pool</th>
                    <th scope="col">saturation</th>
                    <th scope="col" className="num">
                      waiting
                    </th>
                    <th scope="col" className="num">
                      {hasP95 ? 'p95' : 'mean query'}
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {pools.map((p) => (
                    <tr key={poolKey(p.r)}>
                      <td>
                        {poolKey(p.r)}
                        {poolUnreachable(p.r) ? (
                          <span className="badge unreachable">unreachable</span>
                        ) : p.r['paused'] ? (
                          <span className="badge paused">paused</span>
                        ) : null}
                      </td>
                      <td>
                        <Meter big value={saturation(p.r)} label={`saturation of ${poolKey(p.r)}`} />
                      </td>
                      <td className="num" data-live="">
                        {count(p.r['cl_waiting'])}
                      </td>
                      <td className="num" data-live="">
                        {hasP95 ? (p.p95 ? micros(p.p95) : '–') : micros(p.stat?.['avg_query_time'])}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
        <div className="wall-panel">
          <h2>Last admin events</h2>
          {events.data === null ? (
            <p className="muted">{events.error ?? 'Loading…'}</p>
          ) : events.data.length === 0 ? (
            <p className="muted" data-testid="wall-events-empty">
              No admin events yet.
            </p>
          ) : (
            <ol className="wall-events" data-testid="wall-events">
              {events.data.slice(0, EVENTS).map((e, i) => (
                <li key={`${e.time}/${i}`} className={`event ${e.kind}`}>
                  <span className="time" data-live="">
                    {new Date(e.time).toLocaleTimeString('en-GB')}
                  </span>{' '}
                  <span className="kind">{e.kind}</span>{' '}
                  {e.pool && (
                    <a className="pool" {...linkProps(`/pools/${e.pool.split('/').map(encodeURIComponent).join('/')}`)}>
                      {e.pool}
                    </a>
                  )}{' '}
                  <span className="msg">{e.message}</span>
                  {explorer && (
                    <>
                      {' '}
                      <a
                        className="pool"
                        href={eventLogsHref(explorer, e)}
                        target="_blank"
                        rel="noreferrer"
                        data-testid="event-logs"
                      >
                        logs
                      </a>
                    </>
                  )}
                </li>
              ))}
            </ol>
          )}
        </div>
      </div>
    </section>
  );
}

/** A figure with its unit set smaller after it ("8.70" and "ms"), on one line. */
function BigNumber(props: { label: string; value: string; tone?: Tone; testId?: string }) {
  const m = /^(-?[\d.,]+) (\D.*)$/.exec(props.value);
  return (
    <div className={props.tone ? `big-number ${props.tone}` : 'big-number'} data-testid={props.testId}>
      <div className="big-label">{props.label}</div>
      <div className="big-value" data-live="">
        {m ? (
          <>
            {m[1]}
            <span className="big-unit"> {m[2]}</span>
          </>
        ) : (
          props.value
        )}
      </div>
    </div>
  );
}
