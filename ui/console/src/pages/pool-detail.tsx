// One user@database pool: its SHOW POOLS and STATS rows, PAUSE / RESUME / RECONNECT behind typed confirmations.
import { useState } from 'react';
import type { Row } from '../api';
import { navigate } from '../router';
import { usePolling } from '../use-polling';
import { AdminAction, type Verb } from './admin-action';

const PROMPTS: Record<Exclude<Verb, 'reload'>, string> = {
  pause: 'New server checkouts stop; running transactions finish.',
  resume: 'Server checkouts are allowed again.',
  reconnect: 'Idle server connections are closed; active ones are closed when they return.',
};

export function PoolDetailPage(props: { id: string }) {
  const decoded = decodeURIComponent(props.id);
  const at = decoded.lastIndexOf('@');
  const user = decoded.slice(0, at);
  const database = decoded.slice(at + 1);
  const pools = usePolling<Row[]>('/api/pools');
  const stats = usePolling<Row[]>('/api/stats');
  const [verb, setVerb] = useState<Exclude<Verb, 'reload'> | null>(null);
  const match = (r: Row) => r['database'] === database && r['user'] === user;
  const pool = pools.data?.find(match);
  const stat = stats.data?.find(match);
  return (
    <section>
      <p><a href="/pools" onClick={(e) => { e.preventDefault(); navigate('/pools'); }}>← Pools</a></p>
      <div className="page-head">
        <h1>{user}@{database}</h1>
        {pool && <span className={pool['paused'] ? 'badge paused' : 'badge'} data-testid="pool-state">{pool['paused'] ? 'paused' : 'running'}</span>}
      </div>
      {pools.error && <p className="error">{pools.error}</p>}
      {pools.data && !pool && <p className="error">No pool {user}@{database}.</p>}
      <div className="actions">
        {(['pause', 'resume', 'reconnect'] as const).map((v) => (
          <button key={v} className="danger" onClick={() => setVerb(v)}>{v.toUpperCase()}</button>
        ))}
      </div>
      <div className="kv-grid">
        {pool && <KeyValues title="SHOW POOLS" row={pool} />}
        {stat && <KeyValues title="SHOW STATS" row={stat} />}
      </div>
      {verb && (
        <AdminAction
          verb={verb}
          expected={database}
          prompt={`${verb.toUpperCase()} ${user}@${database}. ${PROMPTS[verb]}`}
          body={{ database, user }}
          onDone={() => { setVerb(null); pools.refresh(); }}
        />
      )}
    </section>
  );
}

function KeyValues(props: { title: string; row: Row }) {
  return (
    <div className="kv">
      <h2>{props.title}</h2>
      <dl>
        {Object.entries(props.row).map(([k, v]) => (
          <div key={k}><dt>{k}</dt><dd>{v === null ? '' : String(v)}</dd></div>
        ))}
      </dl>
    </div>
  );
}
