// Servers: each PostgreSQL connection with its backend pid (join pg_stat_activity), state, ages, counts, bytes, prepare-cache hits and misses.
import type { Row } from '../api';
import { DataTable, withExtraColumns, type Column } from '../components/data-table';
import { Empty, Gate } from '../components/states';
import { bytes, millis, percent, seconds } from '../format';
import { usePolling } from '../use-polling';
import { useHistory } from '../history';
import { OutageBanner, outagesOf } from '../components/outage';
import { activityOf, activityRank, StateTag } from '../components/state-tag';

const hitRate = (r: Row) => {
  const hit = Number(r['prepare_cache_hit']) || 0;
  const miss = Number(r['prepare_cache_miss']) || 0;
  return hit + miss === 0 ? null : hit / (hit + miss);
};

export const SERVER_COLUMNS: Column[] = [
  { key: 'server_id', label: 'id', num: true, live: true },
  { key: 'server_process_id', label: 'PostgreSQL pid', num: true, live: true },
  { key: 'database_name', label: 'database' },
  { key: 'user' },
  { key: 'application_name', label: 'application' },
  { key: 'state', render: (r) => <StateTag row={r} />, sortValue: activityRank },
  {
    key: 'query_age_ms',
    label: 'query age',
    help: 'query_age',
    num: true,
    live: true,
    render: (r) =>
      r['query_age_ms'] === undefined || r['query_age_ms'] === null || activityOf(r) !== 'active'
        ? ''
        : millis(r['query_age_ms']),
  },
  {
    key: 'xact_age_ms',
    label: 'transaction age',
    help: 'xact_age',
    num: true,
    live: true,
    render: (r) => (Number(r['xact_age_ms']) > 0 ? millis(r['xact_age_ms']) : ''),
  },
  {
    key: 'wait',
    label: 'idle for',
    num: true,
    live: true,
    render: (r) => (r['state'] === 'idle' ? seconds(r['wait']) : ''),
  },
  { key: 'transaction_count', label: 'transactions', help: 'total_xact_count', num: true, live: true },
  { key: 'query_count', label: 'queries', help: 'total_query_count', num: true, live: true },
  { key: 'bytes_sent', label: 'sent', help: 'bytes', num: true, live: true, render: (r) => bytes(r['bytes_sent']) },
  {
    key: 'bytes_received',
    label: 'received',
    help: 'bytes',
    num: true,
    live: true,
    render: (r) => bytes(r['bytes_received']),
  },
  { key: 'prepare_cache_hit', label: 'cache hits', help: 'prepare_cache', num: true, live: true },
  { key: 'prepare_cache_miss', label: 'cache misses', help: 'prepare_cache', num: true, live: true },
  { key: 'hit_rate', label: 'hit rate', num: true, live: true, render: (r) => percent(hitRate(r)), sortValue: hitRate },
  { key: 'age_seconds', label: 'age', num: true, live: true, render: (r) => seconds(r['age_seconds']) },
];

/** Columns for the rows at hand: query age only once the pooler reports it. */
export function serverColumns(rows: Row[]): Column[] {
  const cols = SERVER_COLUMNS.filter(
    (c) => (c.key !== 'query_age_ms' && c.key !== 'xact_age_ms') || rows.length === 0 || c.key in rows[0]!,
  );
  return withExtraColumns(cols, rows, ['tls', 'prepare_cache_size', 'activity']);
}

export function ServersPage() {
  const polled = usePolling<Row[]>('/api/servers');
  const outages = outagesOf(useHistory());
  return (
    <section aria-labelledby="servers-title">
      <h1 id="servers-title">Servers</h1>
      <OutageBanner outages={outages} testId="servers-outage" />
      <p className="muted">
        Join with PostgreSQL: <code>select * from pg_stat_activity where pid = &lt;PostgreSQL pid&gt;</code>.
      </p>
      <Gate loading={polled.loading} error={polled.error} hasData={polled.data !== null} what="servers">
        {() => (
          <DataTable
            caption="Server connections to PostgreSQL"
            testId="servers-table"
            rows={polled.data!}
            columns={serverColumns(polled.data!)}
            rowKey={(r) => String(r['server_id'])}
            empty={
              <Empty testId="servers-empty">
                {outages.length > 0
                  ? `No server connections are open: PostgreSQL is unreachable (${outages.map((o) => o.database).join(', ')}); the pools keep trying and open them once it answers.`
                  : 'No server connections are open: the pools open them when clients need them.'}
              </Empty>
            }
          />
        )}
      </Gate>
    </section>
  );
}
