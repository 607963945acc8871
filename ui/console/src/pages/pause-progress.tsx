// After PAUSE: the pool's transactions still running (sv_active) and its waiting clients, live, with Resume and Close.
import { useState } from 'react';
import { api, ApiError, type Row } from '../api';
import { useEscape } from '../components/use-escape';
import { count, seconds } from '../format';
import { usePolling } from '../use-polling';

/** Faster than the pages' 2 s: the operator is watching this number reach 0 to go on with a switchover. */
const PAUSE_POLL_MS = 1000;

export function pauseStatus(paused: boolean, running: number): string {
  if (!paused) return 'running: the pool is not paused';
  if (running === 0) return 'paused: no transaction running';
  return `paused, waiting for ${count(running)} transaction${running === 1 ? '' : 's'}`;
}

export function PauseProgress(props: {
  pool: { database: string; user: string };
  result: string;
  running: number | null;
  onActed?: () => void;
  onDone: (message: string | null) => void;
}) {
  const { database, user } = props.pool;
  const [resumed, setResumed] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const pools = usePolling<Row[]>(resumed === null ? '/api/pools' : null, { intervalMs: PAUSE_POLL_MS });
  const row = pools.data?.find((r) => r['database'] === database && r['user'] === user) ?? null;
  // Until the first poll answers, the count PAUSE answered with.
  const running = row ? Number(row['sv_active']) : props.running;
  const paused = row ? Boolean(row['paused']) : true;
  const waiting = row ? Number(row['cl_waiting']) : 0;
  const close = () => props.onDone(resumed ?? props.result);
  useEscape(close);
  const resume = async () => {
    setBusy(true);
    try {
      const r = await api<{ message: string }>('/api/admin/resume', { method: 'POST', body: props.pool });
      setResumed(`RESUME: ${r.message}`);
      props.onActed?.();
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return props.onDone(null);
      setResumed(`RESUME failed: ${(e as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-labelledby="pause-title">
        <h2 id="pause-title">
          PAUSE {database}/{user}
        </h2>
        <p data-testid="action-result">{resumed ?? props.result}</p>
        {resumed === null && (
          <>
            <p data-testid="pause-status" role="status">
              {running === null ? 'paused' : pauseStatus(paused, running)}
            </p>
            {/* Clients wait through a PAUSE, past query_wait_timeout (README: PAUSE); the operator sees how many and how long. */}
            <p className="muted" data-testid="pause-waiting">
              {waiting > 0
                ? `${count(waiting)} client${waiting === 1 ? '' : 's'} waiting for a server, the longest for ${seconds(row?.['maxwait'])}`
                : 'No client is waiting for a server.'}
            </p>
            {pools.error && (
              <p className="error" role="alert">
                The pool's numbers are not updating: {pools.error}
              </p>
            )}
          </>
        )}
        <div className="actions">
          {resumed === null && (
            <button className="danger" onClick={() => void resume()} disabled={busy}>
              Resume
            </button>
          )}
          <button className="secondary" onClick={close} autoFocus>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
