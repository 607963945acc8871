// Typed confirmation for admin actions: the button arms only when the expected word is typed exactly; Escape cancels.
import { useState, type FormEvent } from 'react';
import { useEscape } from './use-escape';

export function ConfirmDialog(props: {
  title: string;
  expected: string;
  prompt: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const [typed, setTyped] = useState('');
  const armed = typed === props.expected && !props.busy;
  useEscape(props.onCancel);
  const submit = (ev: FormEvent) => {
    ev.preventDefault();
    if (armed) props.onConfirm();
  };
  return (
    <div className="modal-backdrop">
      <form className="modal" role="dialog" aria-labelledby="confirm-title" onSubmit={submit}>
        <h2 id="confirm-title">{props.title}</h2>
        <p>
          {props.prompt} Type <code>{props.expected}</code> to confirm.
        </p>
        <input
          name="confirmation"
          aria-label="confirmation"
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
          autoFocus
        />
        <div className="actions">
          <button type="submit" className="danger" disabled={!armed}>
            {props.busy ? 'Working…' : 'Confirm'}
          </button>
          <button type="button" className="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
