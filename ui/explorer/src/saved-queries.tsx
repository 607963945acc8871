// Saved queries, kept by the UI backend per user name: save the current view under a name, open one, delete one.
import { useEffect, useState } from 'react';
import { call, setUserName, userName, type SavedQuery } from './api';

export interface SavedQueriesProps {
  /** The current view as URL parameters (what a saved query brings back). */
  search: string;
  query: string;
  onOpen: (search: string) => void;
  onClose: () => void;
}

export function SavedQueries(props: SavedQueriesProps) {
  const [user, setUser] = useState(userName);
  const [nameDraft, setNameDraft] = useState('');
  const [list, setList] = useState<SavedQuery[] | null>(null);
  const [title, setTitle] = useState('');
  const [problem, setProblem] = useState<string | null>(null);

  const load = () => {
    if (!userName()) return;
    call<{ saved_queries: SavedQuery[] }>('GET', '/saved_queries').then(
      (r) => setList(r.saved_queries),
      (err: Error) => setProblem(err.message),
    );
  };
  useEffect(load, [user]);

  const save = async () => {
    if (!title.trim()) return setProblem('Give the query a name.');
    try {
      await call('POST', '/saved_queries', { name: title.trim(), query: props.query, view: { search: props.search } });
      setTitle('');
      setProblem(null);
      load();
    } catch (err) {
      setProblem((err as Error).message);
    }
  };

  const remove = async (id: number) => {
    try {
      await call('DELETE', `/saved_queries/${id}`);
      load();
    } catch (err) {
      setProblem((err as Error).message);
    }
  };

  return (
    <div
      className="modal-back"
      onMouseDown={(e) => {
        if (e.target === e.currentTarget) props.onClose();
      }}
    >
      <div className="modal small" role="dialog" aria-modal="true" aria-labelledby="saved-title" data-testid="saved">
        <div className="modal-head">
          <h2 id="saved-title">Saved queries{user ? ` of ${user}` : ''}</h2>
          <button type="button" aria-label="Close the saved queries" onClick={props.onClose}>
            ×
          </button>
        </div>
        {!user ? (
          <form
            className="stack-form"
            onSubmit={(e) => {
              e.preventDefault();
              if (nameDraft.trim()) {
                setUserName(nameDraft.trim());
                setUser(nameDraft.trim());
              }
            }}
          >
            <label className="stack">
              Your name (saved queries are kept per name)
              <input
                data-testid="user-name"
                value={nameDraft}
                onChange={(e) => setNameDraft(e.target.value)}
                autoFocus
              />
            </label>
            <button type="submit" className="primary">
              Continue
            </button>
          </form>
        ) : (
          <>
            <form
              className="save-row"
              onSubmit={(e) => {
                e.preventDefault();
                void save();
              }}
            >
              <input
                data-testid="save-name"
                aria-label="Name of the saved query"
                placeholder="Name this view"
                value={title}
                onChange={(e) => setTitle(e.target.value)}
              />
              <button type="submit" className="primary" data-testid="save">
                Save current view
              </button>
            </form>
            {problem && (
              <p className="banner bad" role="alert">
                {problem}
              </p>
            )}
            {list === null ? (
              <p className="fs-note">Loading…</p>
            ) : list.length === 0 ? (
              <p className="fs-note">Nothing saved yet.</p>
            ) : (
              <ul className="saved-list">
                {list.map((q) => (
                  <li key={q.id} data-testid="saved-item" data-name={q.name}>
                    <button
                      type="button"
                      className="saved-open"
                      onClick={() => props.onOpen(String(q.view['search'] ?? `?q=${encodeURIComponent(q.query)}`))}
                    >
                      <strong>{q.name}</strong>
                      <code>{q.query || '*'}</code>
                    </button>
                    <button
                      type="button"
                      className="saved-del"
                      aria-label={`Delete ${q.name}`}
                      onClick={() => void remove(q.id)}
                    >
                      ×
                    </button>
                  </li>
                ))}
              </ul>
            )}
            <button
              type="button"
              className="linkish"
              onClick={() => {
                setUserName('');
                localStorage.removeItem('tidepool.explorer.user');
                setUser('');
                setList(null);
              }}
            >
              Not {user}?
            </button>
          </>
        )}
      </div>
    </div>
  );
}
