// Config: every key with value, default and whether RELOAD changes it; RELOAD (Admin, typed RELOAD); databases, users, log level, coordinator.
import { useState } from 'react';
import type { Row } from '../api';
import { DataTable, withExtraColumns, type Column } from '../components/data-table';
import { Empty, Gate } from '../components/states';
import { useRole } from '../role';
import { refreshHistory } from '../history';
import { usePolling } from '../use-polling';
import { AdminAction } from './admin-action';

const CONFIG_COLUMNS: Column[] = [
  { key: 'key', render: (r) => <code>{String(r['key'])}</code> },
  // Long values (auth_query's SQL) are cut with an ellipsis and shown whole on hover, so the table keeps its columns.
  {
    key: 'value',
    render: (r) => (
      <code
        title={String(r['value'])}
        className={`config-value${String(r['value']) !== String(r['default']) ? ' changed' : ''}`}
      >
        {String(r['value'])}
      </code>
    ),
  },
  {
    key: 'default',
    render: (r) => (
      <code title={String(r['default'])} className="config-value">
        {String(r['default'])}
      </code>
    ),
  },
  {
    key: 'changeable',
    label: 'RELOAD changes it',
    render: (r) => (r['changeable'] === 'yes' || r['changeable'] === true ? 'yes' : 'no, restart'),
  },
];

const SLOW_MS = 10_000;

export function ConfigPage() {
  const { role } = useRole();
  const config = usePolling<Row[]>('/api/config', { intervalMs: SLOW_MS });
  const databases = usePolling<Row[]>('/api/databases', { intervalMs: SLOW_MS });
  const users = usePolling<Row[]>('/api/users', { intervalMs: SLOW_MS });
  const logLevel = usePolling<Row[]>('/api/log_level', { intervalMs: SLOW_MS });
  const coordinator = usePolling<Row[]>('/api/pool_coordinator');
  const [reload, setReload] = useState(false);
  const [filter, setFilter] = useState('');
  const refreshAll = () => [config, databases, users, logLevel, coordinator].forEach((p) => p.refresh());
  const keys = (config.data ?? []).filter(
    (r) => !filter || `${String(r['key'])} ${String(r['value'])}`.toLowerCase().includes(filter.toLowerCase()),
  );
  return (
    <section aria-labelledby="config-title">
      <div className="page-head">
        <h1 id="config-title">Config</h1>
        {role === 'admin' && (
          <button className="danger" onClick={() => setReload(true)}>
            RELOAD
          </button>
        )}
      </div>
      <div className="cards">
        <div className="card" data-testid="log-level">
          <div className="label">Log level</div>
          <div className="value">{String(logLevel.data?.[0]?.['log_level'] ?? '–')}</div>
        </div>
      </div>
      <h2>Settings</h2>
      <label className="inline filter-one">
        Find a key
        <input
          type="search"
          name="key-filter"
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
          placeholder="e.g. pool_mode"
        />
      </label>
      <Gate loading={config.loading} error={config.error} hasData={config.data !== null} what="the configuration">
        {() => (
          <DataTable
            caption="Configuration keys"
            testId="config-table"
            rows={keys}
            columns={CONFIG_COLUMNS}
            rowKey={(r) => String(r['key'])}
            empty={<Empty>No key matches.</Empty>}
          />
        )}
      </Gate>
      <h2>Databases</h2>
      <Gate loading={databases.loading} error={databases.error} hasData={databases.data !== null} what="databases">
        {() => (
          <DataTable
            caption="Databases (SHOW DATABASES)"
            testId="databases-table"
            rows={databases.data!}
            rowKey={(r) => String(r['name'])}
            columns={withExtraColumns(
              [
                { key: 'name' },
                { key: 'host' },
                { key: 'port', num: true, live: true },
                { key: 'database' },
                { key: 'force_user' },
                { key: 'pool_size', num: true },
                { key: 'min_pool_size', num: true },
                { key: 'reserve_pool', num: true },
                { key: 'pool_mode' },
                { key: 'max_connections', num: true },
                { key: 'current_connections', num: true, live: true },
              ],
              databases.data!,
            )}
            empty={<Empty>No databases are configured.</Empty>}
          />
        )}
      </Gate>
      <h2>Users</h2>
      <Gate loading={users.loading} error={users.error} hasData={users.data !== null} what="users">
        {() => (
          <DataTable
            caption="Users (SHOW USERS)"
            testId="users-table"
            rows={users.data!}
            columns={withExtraColumns([{ key: 'name' }, { key: 'pool_mode' }], users.data!)}
            rowKey={(r) => String(r['name'])}
            empty={<Empty>No users are configured.</Empty>}
          />
        )}
      </Gate>
      <h2>Pool coordinator</h2>
      <Gate
        loading={coordinator.loading}
        error={coordinator.error}
        hasData={coordinator.data !== null}
        what="the coordinator"
      >
        {() => (
          <DataTable
            caption="Per-database connection caps (SHOW POOL_COORDINATOR)"
            testId="coordinator-table"
            rows={coordinator.data!}
            rowKey={(r) => String(r['database'])}
            columns={withExtraColumns(
              [
                { key: 'database' },
                { key: 'max_db_conn', num: true },
                { key: 'current', num: true, live: true },
                { key: 'reserve_size', num: true },
                { key: 'reserve_used', num: true, live: true },
                { key: 'evictions', num: true, live: true },
                { key: 'reserve_acq', num: true, live: true },
                { key: 'exhaustions', num: true, live: true },
              ],
              coordinator.data!,
            )}
            empty={
              <Empty testId="coordinator-empty">
                No database has a <code>max_db_connections</code> cap, so the coordinator has nothing to show.
              </Empty>
            }
          />
        )}
      </Gate>
      {reload && (
        <AdminAction
          verb="reload"
          expected="RELOAD"
          prompt="Re-read the configuration file; keys marked 'no, restart' keep their value until a restart."
          onDone={() => {
            setReload(false);
            refreshAll();
            refreshHistory();
          }}
        />
      )}
    </section>
  );
}
