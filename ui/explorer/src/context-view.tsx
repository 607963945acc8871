// "Show context": the documents just before and after one (POST /context), optionally within the same value of a field.
import { useEffect, useState } from 'react';
import { call, type UiEvent } from './api';
import { cellText } from './results-table';
import { utc } from './time';

interface ContextAnswer {
  event: UiEvent;
  query: string;
  before: UiEvent[];
  after: UiEvent[];
}

/** Documents asked on each side. */
export const CONTEXT_SIZE = 10;

function line(e: UiEvent): string {
  if (typeof e.data !== 'object' || e.data === null) return String(e.data);
  return Object.entries(e.data)
    .map(([k, v]) => `${k}=${cellText(v)}`)
    .join('  ');
}

export function ContextView(props: { event: UiEvent; fieldNames: string[]; onClose: () => void }) {
  const [field, setField] = useState('');
  const [answer, setAnswer] = useState<ContextAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const ctl = new AbortController();
    setAnswer(null);
    setError(null);
    call<ContextAnswer>(
      'POST',
      '/context',
      { id: props.event.id, before: CONTEXT_SIZE, after: CONTEXT_SIZE, ...(field ? { field } : {}) },
      ctl.signal,
    ).then(setAnswer, (err: Error) => {
      if (!ctl.signal.aborted) setError(err.message);
    });
    return () => ctl.abort();
  }, [props.event.id, field]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') props.onClose();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [props]);

  const rows = answer
    ? [
        ...answer.before.map((e) => ({ e, center: false })),
        { e: answer.event, center: true },
        ...answer.after.map((e) => ({ e, center: false })),
      ]
    : [];
  return (
    <div
      className="modal-back"
      onMouseDown={(e) => {
        if (e.target === e.currentTarget) props.onClose();
      }}
    >
      <div
        className="modal context"
        role="dialog"
        aria-modal="true"
        aria-labelledby="context-title"
        data-testid="context"
      >
        <div className="modal-head">
          <h2 id="context-title">Context of {utc(props.event.time).slice(0, 23)}</h2>
          <label>
            Within the same
            <select data-testid="context-field" value={field} onChange={(e) => setField(e.target.value)}>
              <option value="">(all documents)</option>
              {props.fieldNames.map((f) => (
                <option key={f} value={f}>
                  {f}
                </option>
              ))}
            </select>
          </label>
          <button type="button" aria-label="Close the context" onClick={props.onClose}>
            ×
          </button>
        </div>
        {error && (
          <p className="banner bad" role="alert">
            {error}
          </p>
        )}
        {!answer && !error && <p className="fs-note">Loading…</p>}
        {answer && (
          <>
            <p className="fs-note">
              {answer.before.length} before and {answer.after.length} after, oldest first
              {field ? `, where ${answer.query}` : ''}.
            </p>
            <ol className="ctx-list">
              {rows.map(({ e, center }) => (
                <li
                  key={e.id}
                  className={center ? 'center' : undefined}
                  data-testid="context-row"
                  data-id={e.id}
                  aria-current={center ? 'true' : undefined}
                >
                  <span className="r-time">
                    <span className="r-date">{utc(e.time).slice(0, 11)}</span>
                    {utc(e.time).slice(11, 23)}
                  </span>
                  <span className="ctx-doc">{line(e)}</span>
                </li>
              ))}
            </ol>
          </>
        )}
      </div>
    </div>
  );
}
