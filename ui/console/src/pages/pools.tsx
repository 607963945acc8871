// Pools: SHOW POOLS with a saturation bar per pool; a row leads to the pool's page (/pools/<database>/<user>).
import type { Row } from '../api';
import { DataTable, withExtraColumns, type Column } from '../components/data-table';
import { Meter, saturation } from '../components/meter';
import { Empty, Gate } from '../components/states';
import { latest, useHistory } from '../history';
import { micros, millis, seconds } from '../format';
import { poolPath } from '../pages-list';
import { poolUnreachable } from '../components/outage';

/** The pool's state: unreachable (its PostgreSQL), paused, or running. */
export function PoolStateBadge(props: { row: Row; testId?: string }) {
  const r = props.row;
  if (poolUnreachable(r))
    return (
      <span className="badge unreachable" data-testid={props.testId}>
        unreachable
      </span>
    );
  return r['paused'] ? (
    <span className="badge paused" data-testid={props.testId}>
      paused
    </span>
  ) : (
    <span className="badge" data-testid={props.testId}>
      running
    </span>
  );
}

/** SHOW POOLS' health columns: the state badge and the pool's page show them. */
export const HEALTH_COLUMNS = [
  'backend_unreachable',
  'unreachable_since',
  'last_connect_error',
  'last_connect_error_code',
  'last_connect_error_at',
  'connect_failures_per_sec',
];

export const poolHref = (r: Row) => poolPath(String(r['database']), String(r['user']));

const n = (key: string, live = true): Column => ({ key, num: true, live });

export const POOL_COLUMNS: Column[] = [
  { key: 'database' },
  { key: 'user' },
  { key: 'pool_mode', label: 'mode' },
  {
    key: 'saturation',
    help: 'saturation',
    render: (r) => (
      <Meter value={saturation(r)} label={`saturation of ${String(r['database'])}/${String(r['user'])}`} />
    ),
    sortValue: (r) => saturation(r),
  },
  n('cl_active'),
  n('cl_idle'),
  n('cl_waiting'),
  n('cl_pinned'),
  n('cl_idle_in_transaction'),
  n('sv_active'),
  n('sv_idle'),
  n('sv_used'),
  n('sv_login'),
  n('sv_idle_in_transaction'),
  {
    ...n('max_idle_xact_age_ms'),
    render: (r) => (Number(r['max_idle_xact_age_ms']) > 0 ? millis(r['max_idle_xact_age_ms']) : ''),
  },
  n('pool_size', false),
  { ...n('maxwait'), render: (r) => seconds(r['maxwait']) },
  { ...n('avg_xact_time'), render: (r) => micros(r['avg_xact_time']) },
  { key: 'paused', render: (r) => <PoolStateBadge row={r} /> },
];

export function PoolsPage() {
  const history = useHistory();
  const rows = latest(history)?.pools ?? null;
  return (
    <section aria-labelledby="pools-title">
      <h1 id="pools-title">Pools</h1>
      <Gate loading={rows === null} error={history.error} hasData={rows !== null} what="pools">
        {() => (
          <DataTable
            caption="Pools, one per user and database"
            testId="pools-table"
            rows={rows!}
            columns={withExtraColumns(POOL_COLUMNS, rows!, [
              'maxwait_us',
              'cl_cancel_req',
              'fallback_active',
              ...HEALTH_COLUMNS,
            ])}
            rowKey={(r) => poolHref(r)}
            rowHref={poolHref}
            defaultSort={{ key: 'database', order: 'asc' }}
            empty={
              <Empty>
                No pools are configured: add a <code>[pools.&lt;name&gt;]</code> section and RELOAD.
              </Empty>
            }
          />
        )}
      </Gate>
    </section>
  );
}
