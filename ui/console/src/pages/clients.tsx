// Clients: URL filters (pool, database, user, state or activity, application_name, addr), server-side sort and paging, per-client rates, wait reasons.
import { useEffect, useMemo, useRef, useState } from 'react';
import type { Row } from '../api';
import { DataTable, withExtraColumns, type Column, type Sort } from '../components/data-table';
import { Empty, Gate } from '../components/states';
import { clientLogsQuery, explorerHref, useExplorerUrl } from '../explorer-links';
import { bytes, count, micros, millis, rate, seconds } from '../format';
import { latest, poolKey, poolRow, useHistory } from '../history';
import { setQuery } from '../router';
import { usePolling } from '../use-polling';
import { activityOf, StateTag } from '../components/state-tag';

export const CLIENT_FILTERS = ['pool', 'database', 'user', 'state', 'activity', 'application_name', 'addr'] as const;
type Filter = (typeof CLIENT_FILTERS)[number];
const PAGE_SIZES = [50, 100, 200];
const OPTIONAL_COLUMNS = new Set(['query_age_ms', 'xact_age_ms', 'bytes_received', 'bytes_sent']);
const TEXT_DELAY_MS = 300;
const IDLE_IN_TRANSACTION = 'idle in transaction';

interface ClientsQuery {
  filters: Record<Filter, string>;
  sort: Sort;
  offset: number;
  limit: number;
}

export function parseClientsQuery(search: string): ClientsQuery {
  const q = new URLSearchParams(search);
  const filters = Object.fromEntries(CLIENT_FILTERS.map((f) => [f, q.get(f) ?? ''])) as Record<Filter, string>;
  const limit = Number(q.get('limit'));
  return {
    filters,
    sort: { key: q.get('sort') || 'client_id', order: q.get('order') === 'desc' ? 'desc' : 'asc' },
    offset: Math.max(0, Math.floor(Number(q.get('offset')) || 0)),
    limit: PAGE_SIZES.includes(limit) ? limit : PAGE_SIZES[0]!,
  };
}

function toParams(c: ClientsQuery): Record<string, string | number | null> {
  return {
    ...c.filters,
    sort: c.sort.key === 'client_id' && c.sort.order === 'asc' ? null : c.sort.key,
    order: c.sort.key === 'client_id' && c.sort.order === 'asc' ? null : c.sort.order,
    offset: c.offset || null,
    limit: c.limit === PAGE_SIZES[0] ? null : c.limit,
  };
}

function apiPath(c: ClientsQuery): string {
  const q = new URLSearchParams();
  for (const f of CLIENT_FILTERS) if (c.filters[f] !== '') q.set(f, c.filters[f]);
  q.set('sort', c.sort.key);
  q.set('order', c.sort.order);
  q.set('offset', String(c.offset));
  q.set('limit', String(c.limit));
  return `/api/clients?${q.toString()}`;
}

export function ClientsPage(props: { search: string }) {
  const query = useMemo(() => parseClientsQuery(props.search), [props.search]);
  const update = (change: Partial<ClientsQuery>, keepOffset = false) =>
    setQuery(toParams({ ...query, ...change, offset: keepOffset ? (change.offset ?? query.offset) : 0 }));
  const polled = usePolling<Row[]>(apiPath(query));
  const history = useHistory();
  const explorer = useExplorerUrl();
  const pools = latest(history)?.pools ?? null;
  const total = Number(polled.headers?.get('x-total-count') ?? polled.data?.length ?? 0);

  const waitReason = (r: Row) => {
    if (r['wait_reason'] !== undefined && r['wait_reason'] !== null) return String(r['wait_reason']);
    if (r['state'] !== 'waiting') return '';
    const pool = poolRow(pools, `${String(r['database'])}/${String(r['user'])}`);
    if (!pool) return 'waiting for a server';
    return pool['paused'] ? 'pool paused' : 'all servers busy';
  };
  const columns: Column[] = [
    {
      key: 'client_id',
      label: 'id',
      num: true,
      live: true,
      render: (r) =>
        explorer ? (
          <>
            {String(r['client_id'])}{' '}
            <a
              href={explorerHref(explorer, clientLogsQuery(String(r['client_id'])))}
              target="_blank"
              rel="noreferrer"
              data-testid="client-logs"
              title="This client's log records in the log explorer"
            >
              logs
            </a>
          </>
        ) : (
          String(r['client_id'])
        ),
    },
    { key: 'database' },
    { key: 'user' },
    { key: 'application_name', label: 'application' },
    { key: 'addr', label: 'peer address', live: true },
    { key: 'state', render: (r) => <StateTag row={r} /> },
    {
      key: 'wait',
      num: true,
      live: true,
      render: (r) =>
        r['state'] !== 'waiting' ? '' : typeof r['wait_us'] === 'number' ? micros(r['wait_us']) : seconds(r['wait']),
    },
    { key: 'wait_reason', label: 'wait reason', render: waitReason },
    {
      key: 'qps',
      label: 'Q/s',
      help: 'client_qps',
      num: true,
      live: true,
      render: (r) => rate(r['qps'] as number | null | undefined),
    },
    {
      key: 'tps',
      label: 'Tx/s',
      help: 'client_tps',
      num: true,
      live: true,
      render: (r) => rate(r['tps'] as number | null | undefined),
    },
    { key: 'transaction_count', label: 'transactions', help: 'total_xact_count', num: true, live: true },
    { key: 'query_count', label: 'queries', help: 'total_query_count', num: true, live: true },
    { key: 'error_count', label: 'errors', help: 'total_errors', num: true, live: true },
    {
      key: 'query_age_ms',
      label: 'query age',
      help: 'client_query_age',
      num: true,
      live: true,
      render: (r) =>
        r['query_age_ms'] === null || r['query_age_ms'] === undefined || activityOf(r) !== 'active'
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
      key: 'bytes_received',
      label: 'received',
      help: 'bytes',
      num: true,
      live: true,
      render: (r) => bytes(r['bytes_received']),
    },
    { key: 'bytes_sent', label: 'sent', help: 'bytes', num: true, live: true, render: (r) => bytes(r['bytes_sent']) },
    { key: 'age_seconds', label: 'age', num: true, live: true, render: (r) => seconds(r['age_seconds']) },
  ];
  const present = polled.data?.[0];
  // Columns of fields this pooler reports (a pooler without query ages or bytes per client leaves them out).
  const shown = withExtraColumns(
    columns.filter((c) => !present || !OPTIONAL_COLUMNS.has(c.key) || c.key in present),
    polled.data ?? [],
    ['tls', 'wait_us', 'xact_time_us', 'activity'],
  );
  const from = total === 0 ? 0 : query.offset + 1;
  const to = Math.min(total, query.offset + query.limit);
  const anyFilter = CLIENT_FILTERS.some((f) => query.filters[f] !== '');
  return (
    <section aria-labelledby="clients-title">
      <h1 id="clients-title">Clients</h1>
      <ClientFilters query={query} pools={(pools ?? []).map(poolKey)} onChange={(filters) => update({ filters })} />
      <Gate loading={polled.loading} error={polled.error} hasData={polled.data !== null} what="clients">
        {() => (
          <>
            <div className="pager" role="navigation" aria-label="Pages of clients">
              <span data-testid="clients-count" aria-live="polite">
                {from}–{to} of {count(total)}
              </span>
              <button
                type="button"
                className="secondary"
                disabled={query.offset === 0}
                onClick={() => update({ offset: Math.max(0, query.offset - query.limit) }, true)}
              >
                Previous
              </button>
              <button
                type="button"
                className="secondary"
                disabled={to >= total}
                onClick={() => update({ offset: query.offset + query.limit }, true)}
              >
                Next
              </button>
              <label className="inline">
                Per page
                <select value={query.limit} onChange={(e) => update({ limit: Number(e.target.value) })}>
                  {PAGE_SIZES.map((s) => (
                    <option key={s} value={s}>
                      {s}
                    </option>
                  ))}
                </select>
              </label>
            </div>
            <DataTable
              caption="Client connections"
              testId="clients-table"
              rows={polled.data!}
              columns={shown}
              rowKey={(r) => String(r['client_id'])}
              sort={query.sort}
              onSort={(sort) => update({ sort })}
              empty={
                <Empty testId="clients-empty">
                  {anyFilter ? 'No client matches these filters.' : 'No clients are connected.'}
                </Empty>
              }
            />
          </>
        )}
      </Gate>
    </section>
  );
}

function ClientFilters(props: { query: ClientsQuery; pools: string[]; onChange: (f: Record<Filter, string>) => void }) {
  const [draft, setDraft] = useState(props.query.filters);
  const committed = useRef(props.query.filters);
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  useEffect(() => {
    // The URL changed from outside (back button, a link): show its filters.
    committed.current = props.query.filters;
    setDraft(props.query.filters);
  }, [props.query.filters]);
  useEffect(() => {
    if (CLIENT_FILTERS.every((f) => draft[f] === committed.current[f])) return undefined;
    const t = window.setTimeout(() => onChange.current(draft), TEXT_DELAY_MS);
    return () => window.clearTimeout(t);
  }, [draft]);
  const set = (f: Filter, v: string) => setDraft((d) => ({ ...d, [f]: v }));
  // 'idle in transaction' is an activity (SHOW CLIENTS counts those clients as active): one select sets either filter.
  const setState = (v: string) =>
    setDraft((d) => ({
      ...d,
      state: v === IDLE_IN_TRANSACTION ? '' : v,
      activity: v === IDLE_IN_TRANSACTION ? v : '',
    }));
  const text = (f: Filter, label: string, placeholder: string) => (
    <label>
      {label}
      <input name={f} value={draft[f]} placeholder={placeholder} onChange={(e) => set(f, e.target.value)} />
    </label>
  );
  return (
    <form
      className="filters"
      role="search"
      aria-label="Filter clients"
      onSubmit={(e) => {
        e.preventDefault();
        props.onChange(draft);
      }}
    >
      <label>
        Pool
        <select name="pool" value={draft.pool} onChange={(e) => set('pool', e.target.value)}>
          <option value="">any</option>
          {[...new Set([...props.pools, ...(draft.pool ? [draft.pool] : [])])].map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </label>
      {text('database', 'Database', 'any')}
      {text('user', 'User', 'any')}
      <label>
        State
        <select name="state" value={draft.activity || draft.state} onChange={(e) => setState(e.target.value)}>
          <option value="">any</option>
          {['active', 'idle', 'waiting', IDLE_IN_TRANSACTION].map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      {text('application_name', 'Application', 'exact name')}
      {text('addr', 'Peer address', 'host or host:port')}
      <button
        type="button"
        className="secondary"
        onClick={() => {
          const empty = Object.fromEntries(CLIENT_FILTERS.map((f) => [f, ''])) as Record<Filter, string>;
          setDraft(empty);
          props.onChange(empty);
        }}
      >
        Clear
      </button>
    </form>
  );
}
