// One pool (/pools/<database>/<user>): saturation, per-pool charts, its clients and servers, PAUSE / RESUME / RECONNECT (Admin, typed database name).
import { useState } from 'react';
import type { Row } from '../api';
import { Card } from '../components/card';
import { Chart } from '../components/chart';
import { DataTable, type Column } from '../components/data-table';
import { Meter, saturation } from '../components/meter';
import { Empty, Gate } from '../components/states';
import { count, micros, microsTicks, millis, rate, seconds } from '../format';
import { latest, poolP95, poolRow, refreshHistory, series, useHistory } from '../history';
import { explorerHref, poolLogsQuery, useExplorerUrl } from '../explorer-links';
import { linkProps } from '../router';
import { useRole } from '../role';
import { usePolling } from '../use-polling';
import { AdminAction, type Verb } from './admin-action';
import { serverColumns } from './servers';
import { PoolStateBadge } from './pools';
import { clock, lastErrorText, poolUnreachable } from '../components/outage';
import { sqlStateName } from '../sqlstates';
import { activityRank, StateTag } from '../components/state-tag';
import { IdleXactLine, idleXact, running } from '../components/idle-xact';

const ERROR_COLUMNS: Column[] = [
  { key: 'sqlstate', label: 'SQLSTATE', render: (r) => <code>{String(r['sqlstate'])}</code> },
  {
    key: 'name',
    label: 'condition',
    render: (r) => sqlStateName(String(r['sqlstate'])),
    sortValue: (r) => sqlStateName(String(r['sqlstate'])),
  },
  { key: 'count', label: 'errors', num: true, live: true },
];

const PROMPTS: Record<Exclude<Verb, 'reload'>, string> = {
  pause: 'New server checkouts stop; running transactions finish.',
  resume: 'Server checkouts are allowed again.',
  reconnect: 'Idle server connections are closed; active ones are closed when they return.',
};

/** `/pools/<database>/<user>` (each part URI-encoded), or the older `/pools/<user>@<database>`. */
export function parsePoolId(path: string): { database: string; user: string } | null {
  const two = /^\/pools\/([^/]+)\/([^/]+)$/.exec(path);
  const dec = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  if (two) return { database: dec(two[1]!), user: dec(two[2]!) };
  const one = /^\/pools\/([^/]+)$/.exec(path);
  if (!one) return null;
  const id = dec(one[1]!);
  const at = id.lastIndexOf('@');
  return at > 0 ? { user: id.slice(0, at), database: id.slice(at + 1) } : null;
}

const CLIENT_COLUMNS: Column[] = [
  { key: 'client_id', label: 'id', num: true, live: true },
  { key: 'application_name', label: 'application' },
  { key: 'addr', label: 'peer address', live: true },
  { key: 'state', render: (r) => <StateTag row={r} />, sortValue: activityRank },
  { key: 'wait', num: true, live: true, render: (r) => (r['state'] === 'waiting' ? seconds(r['wait']) : '') },
  {
    key: 'xact_age_ms',
    label: 'transaction age',
    help: 'xact_age',
    num: true,
    live: true,
    render: (r) => (Number(r['xact_age_ms']) > 0 ? millis(r['xact_age_ms']) : ''),
  },
  { key: 'transaction_count', label: 'transactions', help: 'total_xact_count', num: true, live: true },
  { key: 'query_count', label: 'queries', help: 'total_query_count', num: true, live: true },
  { key: 'error_count', label: 'errors', help: 'total_errors', num: true, live: true },
  { key: 'age_seconds', label: 'age', num: true, live: true, render: (r) => seconds(r['age_seconds']) },
];
const CLIENTS_SHOWN = 20;

export function PoolDetailPage(props: { database: string; user: string }) {
  const { database, user } = props;
  const key = `${database}/${user}`;
  const explorer = useExplorerUrl();
  const { role } = useRole();
  const history = useHistory();
  const sample = latest(history);
  const pool = poolRow(sample?.pools ?? null, key);
  const stat = poolRow(sample?.stats ?? null, key);
  const clientsPath = `/api/clients?${new URLSearchParams({ pool: key, sort: 'activity', order: 'asc', limit: String(CLIENTS_SHOWN) }).toString()}`;
  const clients = usePolling<Row[]>(clientsPath);
  const servers = usePolling<Row[]>('/api/servers');
  const errors = usePolling<Row[]>(`/api/pools/${encodeURIComponent(database)}/${encodeURIComponent(user)}/errors`);
  const [verb, setVerb] = useState<Exclude<Verb, 'reload'> | null>(null);
  const mine = (servers.data ?? []).filter((r) => r['database_name'] === database && r['user'] === user);
  const clientTotal = Number(clients.headers?.get('x-total-count') ?? clients.data?.length ?? 0);
  const x = history.samples.map((s) => s.t);
  const fromPool = (col: string) =>
    series(history.samples, (s) => (poolRow(s.pools, key)?.[col] as number | undefined) ?? null);
  // Active without the idle-in-transaction ones (SHOW POOLS counts them in cl_active / sv_active): the states add up.
  const runningOf = (active: string, idle: string) =>
    series(history.samples, (s) => {
      const r = poolRow(s.pools, key);
      return r && r[active] !== undefined ? running(r[active], r[idle]) : null;
    });
  const fromStats = (col: string) =>
    series(history.samples, (s) => (poolRow(s.stats, key)?.[col] as number | undefined) ?? null);
  const known = sample?.pools !== null && sample?.pools !== undefined;
  return (
    <section aria-labelledby="pool-title">
      <p>
        <a {...linkProps('/pools')}>← Pools</a>
      </p>
      <div className="page-head">
        <h1 id="pool-title">
          {database}/{user}
        </h1>
        {pool && <PoolStateBadge row={pool} testId="pool-state" />}
        {explorer && (
          <a
            href={explorerHref(explorer, poolLogsQuery(database, user))}
            target="_blank"
            rel="noreferrer"
            data-testid="pool-logs"
          >
            Logs ↗
          </a>
        )}
        {role === 'admin' && pool && (
          <div className="actions">
            {(['pause', 'resume', 'reconnect'] as const).map((v) => (
              <button key={v} className="danger" onClick={() => setVerb(v)}>
                {v.toUpperCase()}
              </button>
            ))}
          </div>
        )}
      </div>
      <Gate loading={!known} error={history.error} hasData={known} what="the pool">
        {() =>
          !pool ? (
            <Empty testId="no-pool">
              There is no pool{' '}
              <code>
                {database}/{user}
              </code>{' '}
              on this pooler. A pool's address is <code>/pools/&lt;database&gt;/&lt;user&gt;</code>; see{' '}
              <a {...linkProps('/pools')}>the pools</a>.
            </Empty>
          ) : (
            <>
              {poolUnreachable(pool) ? (
                <div className="outage" role="alert" data-testid="pool-outage">
                  <strong>PostgreSQL unreachable since {clock(pool['unreachable_since'])}</strong>: no server connection
                  could be opened for connect_timeout; clients that need one are refused.{' '}
                  {rate(pool['connect_failures_per_sec'])} connect failures/s.
                  {lastErrorText(
                    pool['last_connect_error'],
                    pool['last_connect_error_code'],
                    pool['last_connect_error_at'],
                  ) && (
                    <div className="outage-error">
                      Last error:{' '}
                      {lastErrorText(
                        pool['last_connect_error'],
                        pool['last_connect_error_code'],
                        pool['last_connect_error_at'],
                      )}
                    </div>
                  )}
                </div>
              ) : (
                lastErrorText(
                  pool['last_connect_error'],
                  pool['last_connect_error_code'],
                  pool['last_connect_error_at'],
                ) && (
                  <p className="muted" data-testid="pool-last-error">
                    Last server connect error:{' '}
                    {lastErrorText(
                      pool['last_connect_error'],
                      pool['last_connect_error_code'],
                      pool['last_connect_error_at'],
                    )}
                  </p>
                )
              )}
              <div className="cards" data-testid="pool-cards">
                <Card
                  label="Saturation"
                  help="saturation"
                  value={<Meter value={saturation(pool)} label="saturation: active servers / pool size" />}
                  detail={`${count(pool['sv_active'])} active of ${count(pool['pool_size'])}`}
                />
                <Card
                  label="Clients"
                  help="clients"
                  testId="pool-clients-card"
                  value={count(Number(pool['cl_active']) + Number(pool['cl_idle']) + Number(pool['cl_waiting']))}
                  detail={
                    <>
                      {`${count(running(pool['cl_active'], pool['cl_idle_in_transaction']))} active · ${count(pool['cl_idle'])} idle · ${count(pool['cl_waiting'])} waiting`}
                      <IdleXactLine
                        n={pool['cl_idle_in_transaction']}
                        oldestMs={pool['max_idle_xact_age_ms']}
                        testId="pool-clients-idle-xact"
                      />
                    </>
                  }
                  tone={Number(pool['cl_waiting']) > 0 || idleXact(pool['cl_idle_in_transaction']) > 0 ? 'warn' : null}
                />
                <Card
                  label="Servers"
                  help="servers"
                  testId="pool-servers-card"
                  value={count(
                    Number(pool['sv_active']) +
                      Number(pool['sv_idle']) +
                      Number(pool['sv_used']) +
                      Number(pool['sv_login']),
                  )}
                  detail={
                    <>
                      {`${count(pool['sv_idle'])} idle · ${count(pool['sv_login'])} login`}
                      <IdleXactLine
                        n={pool['sv_idle_in_transaction']}
                        oldestMs={pool['max_idle_xact_age_ms']}
                        testId="pool-servers-idle-xact"
                      />
                    </>
                  }
                  tone={idleXact(pool['sv_idle_in_transaction']) > 0 ? 'warn' : null}
                />
                <Card
                  label="Transactions/s"
                  help="tps"
                  value={rate(stat?.['avg_xact_count'])}
                  detail={`mean ${micros(stat?.['avg_xact_time'])}`}
                />
                <Card
                  label="Queries/s"
                  help="qps"
                  value={rate(stat?.['avg_query_count'])}
                  detail={`mean ${micros(stat?.['avg_query_time'])}${poolP95(sample, key) !== null ? ` · p95 ${micros(poolP95(sample, key))}` : ''}`}
                />
                <Card label="Errors" help="total_errors" value={count(stat?.['total_errors'])} />
              </div>
              <div className="charts" data-testid="pool-charts">
                <Chart
                  testId="pool-chart-rates"
                  title="Transactions and queries per second"
                  help="tps"
                  x={x}
                  series={[
                    { label: 'tps', values: fromStats('avg_xact_count'), color: '--series-1' },
                    { label: 'qps', values: fromStats('avg_query_count'), color: '--series-2' },
                  ]}
                />
                <Chart
                  testId="pool-chart-clients"
                  title="Clients by state"
                  help="clients"
                  x={x}
                  series={[
                    { label: 'active', values: runningOf('cl_active', 'cl_idle_in_transaction'), color: '--series-1' },
                    { label: 'waiting', values: fromPool('cl_waiting'), color: '--series-3' },
                    { label: 'idle in transaction', values: fromPool('cl_idle_in_transaction'), color: '--warn' },
                  ]}
                />
                <Chart
                  testId="pool-chart-servers"
                  title="Servers by state"
                  help="servers"
                  x={x}
                  series={[
                    { label: 'active', values: runningOf('sv_active', 'sv_idle_in_transaction'), color: '--series-1' },
                    { label: 'idle', values: fromPool('sv_idle'), color: '--series-2' },
                    { label: 'idle in transaction', values: fromPool('sv_idle_in_transaction'), color: '--warn' },
                  ]}
                />
                <Chart
                  testId="pool-chart-time"
                  title="Query time"
                  help="avg_query_time"
                  x={x}
                  format={micros}
                  ticks={microsTicks}
                  series={[
                    { label: 'mean', values: fromStats('avg_query_time'), color: '--series-2' },
                    ...(history.samples.some((v) => poolP95(v, key) !== null)
                      ? [{ label: 'p95', values: series(history.samples, (v) => poolP95(v, key)), color: '--series-4' }]
                      : []),
                  ]}
                />
              </div>
              <h2>
                Clients{' '}
                <span className="muted">
                  ({count(clientTotal)};{' '}
                  <a {...linkProps(`/clients?${new URLSearchParams({ pool: key }).toString()}`)}>
                    all on the clients page
                  </a>
                  )
                </span>
              </h2>
              <Gate loading={clients.loading} error={clients.error} hasData={clients.data !== null} what="clients">
                {() => (
                  <DataTable
                    caption={`Clients of ${key}`}
                    testId="pool-clients"
                    rows={clients.data!}
                    columns={CLIENT_COLUMNS}
                    rowKey={(r) => String(r['client_id'])}
                    empty={<Empty>No client is connected to this pool.</Empty>}
                  />
                )}
              </Gate>
              <h2>Servers</h2>
              <Gate loading={servers.loading} error={servers.error} hasData={servers.data !== null} what="servers">
                {() => (
                  <DataTable
                    caption={`Servers of ${key}`}
                    testId="pool-servers"
                    rows={mine}
                    columns={serverColumns(mine).filter((c) => c.key !== 'database_name' && c.key !== 'user')}
                    rowKey={(r) => String(r['server_id'])}
                    empty={<Empty>This pool has no server connection open.</Empty>}
                  />
                )}
              </Gate>
              <h2>
                Errors by SQLSTATE{' '}
                <span className="muted">
                  (sent to this pool's clients since start: PostgreSQL's and the pooler's own)
                </span>
              </h2>
              <Gate loading={errors.loading} error={errors.error} hasData={errors.data !== null} what="errors">
                {() => (
                  <DataTable
                    caption={`Errors of ${key} by SQLSTATE`}
                    testId="pool-errors"
                    rows={errors.data!}
                    columns={ERROR_COLUMNS}
                    rowKey={(r) => String(r['sqlstate'])}
                    defaultSort={{ key: 'count', order: 'desc' }}
                    empty={<Empty>No error was sent to this pool's clients.</Empty>}
                  />
                )}
              </Gate>
            </>
          )
        }
      </Gate>
      {verb && (
        <AdminAction
          verb={verb}
          expected={database}
          prompt={`${verb.toUpperCase()} ${database}/${user}. ${PROMPTS[verb]}`}
          body={{ database, user }}
          onActed={() => {
            refreshHistory();
            servers.refresh();
            clients.refresh();
          }}
          onDone={() => {
            setVerb(null);
            refreshHistory();
            servers.refresh();
          }}
        />
      )}
    </section>
  );
}
