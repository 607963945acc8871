// Runs one admin POST after its typed confirmation and reports the outcome.
import { useState } from 'react';
import { api, ApiError } from '../api';
import { ConfirmDialog } from '../components/confirm-dialog';

export type Verb = 'pause' | 'resume' | 'reconnect' | 'reload';

export function AdminAction(props: { verb: Verb; expected: string; prompt: string; body?: { database: string; user: string }; onDone: (message: string | null) => void }) {
  const [result, setResult] = useState<string | null>(null);
  if (result !== null) {
    return (
      <div className="modal-backdrop">
        <div className="modal" role="dialog">
          <p data-testid="action-result">{result}</p>
          <div className="actions"><button onClick={() => props.onDone(result)}>Close</button></div>
        </div>
      </div>
    );
  }
  const run = async () => {
    try {
      const r = await api<{ ok: boolean; message: string }>(`/api/admin/${props.verb}`, props.body ? { method: 'POST', body: props.body } : { method: 'POST' });
      setResult(`${props.verb.toUpperCase()}: ${r.message}`);
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return props.onDone(null);
      setResult(`${props.verb.toUpperCase()} failed: ${(e as Error).message}`);
    }
  };
  return <ConfirmDialog title={props.verb.toUpperCase()} expected={props.expected} prompt={props.prompt} onConfirm={() => void run()} onCancel={() => props.onDone(null)} />;
}
