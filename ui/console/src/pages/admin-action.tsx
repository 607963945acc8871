// Runs one admin POST after its typed confirmation and reports the outcome; PAUSE then follows its running transactions.
import { useState } from 'react';
import { api, ApiError } from '../api';
import { ConfirmDialog } from '../components/confirm-dialog';
import { useEscape } from '../components/use-escape';
import { PauseProgress } from './pause-progress';

export type Verb = 'pause' | 'resume' | 'reconnect' | 'reload';

/** What the admin POSTs answer; PAUSE adds the transactions still running on the pool when checkouts stopped. */
interface ActionAnswer {
  ok: boolean;
  message: string;
  running_transactions?: number;
}

export function AdminAction(props: {
  verb: Verb;
  expected: string;
  prompt: string;
  body?: { database: string; user: string };
  onActed?: () => void;
  onDone: (message: string | null) => void;
}) {
  const [result, setResult] = useState<{ text: string; answer: ActionAnswer | null } | null>(null);
  const [busy, setBusy] = useState(false);
  if (result !== null && result.answer && props.verb === 'pause' && props.body) {
    return (
      <PauseProgress
        pool={props.body}
        result={result.text}
        running={result.answer.running_transactions ?? null}
        onActed={props.onActed}
        onDone={props.onDone}
      />
    );
  }
  if (result !== null) return <ResultDialog text={result.text} onClose={() => props.onDone(result.text)} />;
  const run = async () => {
    setBusy(true);
    try {
      const r = await api<ActionAnswer>(
        `/api/admin/${props.verb}`,
        props.body ? { method: 'POST', body: props.body } : { method: 'POST' },
      );
      setResult({ text: `${props.verb.toUpperCase()}: ${r.message}`, answer: r });
      // The page behind the dialog shows the new state now, not at its next poll.
      props.onActed?.();
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return props.onDone(null);
      setResult({ text: `${props.verb.toUpperCase()} failed: ${(e as Error).message}`, answer: null });
    } finally {
      setBusy(false);
    }
  };
  return (
    <ConfirmDialog
      title={props.verb.toUpperCase()}
      expected={props.expected}
      prompt={props.prompt}
      busy={busy}
      onConfirm={() => void run()}
      onCancel={() => props.onDone(null)}
    />
  );
}

function ResultDialog(props: { text: string; onClose: () => void }) {
  useEscape(props.onClose);
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog">
        <p data-testid="action-result">{props.text}</p>
        <div className="actions">
          <button onClick={props.onClose} autoFocus>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
