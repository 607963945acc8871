// Pools: SHOW POOLS as a table (click a row for its detail) and RELOAD behind a typed confirmation.
import { useState } from 'react';
import type { Row } from '../api';
import { RowTable } from '../components/row-table';
import { navigate } from '../router';
import { usePolling } from '../use-polling';
import { AdminAction } from './admin-action';

export const poolId = (r: Row) => encodeURIComponent(`${String(r['user'])}@${String(r['database'])}`);

const COLUMNS = ['database', 'user', 'pool_mode', 'cl_active', 'cl_idle', 'cl_waiting', 'sv_active', 'sv_idle', 'sv_used', 'sv_login', 'pool_size', 'maxwait', 'avg_xact_time', 'paused'];

export function PoolsPage() {
  const { data, error, refresh } = usePolling<Row[]>('/api/pools');
  const [reload, setReload] = useState(false);
  return (
    <section>
      <div className="page-head">
        <h1>Pools</h1>
        <button className="danger" onClick={() => setReload(true)}>RELOAD</button>
      </div>
      {error && <p className="error">{error}</p>}
      {data && <RowTable rows={data} columns={COLUMNS} testId="pools-table" onRowClick={(r) => navigate(`/pools/${poolId(r)}`)} />}
      {reload && <AdminAction verb="reload" expected="RELOAD" prompt="Re-read the configuration file." onDone={() => { setReload(false); refresh(); }} />}
    </section>
  );
}
