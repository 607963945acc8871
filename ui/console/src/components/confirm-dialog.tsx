// Typed confirmation for admin actions: the button arms only when the expected word is typed exactly.
import { useState, type FormEvent } from 'react';

export function ConfirmDialog(props: { title: string; expected: string; prompt: string; onConfirm: () => void; onCancel: () => void }) {
  const [typed, setTyped] = useState('');
  const armed = typed === props.expected;
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
        <input name="confirmation" aria-label="confirmation" value={typed} onChange={(e) => setTyped(e.target.value)} autoFocus />
        <div className="actions">
          <button type="submit" className="danger" disabled={!armed}>Confirm</button>
          <button type="button" className="secondary" onClick={props.onCancel}>Cancel</button>
        </div>
      </form>
    </div>
  );
}
