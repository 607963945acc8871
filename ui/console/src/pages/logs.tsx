// Logs (Sso or Admin): the pooler's log tap with level and q in the URL, access-log filter, the console's own polling
// hidden unless asked for, follow, pause, and dropped counts; before the tap's records, the last hour read back from
// the log store the pooler ships to (/api/logs/history), so the page opens on what already happened.
import { useEffect, useMemo, useRef, useState } from 'react';
import { api, ApiError } from '../api';
import { NeedsSignIn } from '../components/needs-sign-in';
import { Empty } from '../components/states';
import { count } from '../format';
import { useRole } from '../role';
import { setQuery } from '../router';
import { POLL_MS } from '../use-polling';
import { everyWhileVisible } from '../visibility';

interface TapEntry {
  seq: number;
  time: string;
  level: string;
  target: string;
  msg: string;
  fields: Record<string, unknown>;
}

export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
const LEVEL_RANK: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
export const ACCESS_TARGET = 'pooler::web::access';
/** Entries kept in the browser; older ones leave as new ones come. */
const KEEP = 5000;
/** Entries drawn at once (the newest that pass the filters). */
const SHOW = 500;
const FETCH_LIMIT = 2000;

export interface LogFilters {
  level: string;
  q: string;
  /** '' shows the access log with the rest, 'hide' leaves it out, 'only' shows only it. */
  access: '' | 'hide' | 'only';
  /** Show the console's own polling (successful GETs of /api/*, at debug): off unless `polls=show`. */
  polls: boolean;
}

/** An access line of a successful API read, the kind the console's pages write every 2 s while they poll. */
export function isPolling(e: TapEntry): boolean {
  return (
    e.target === ACCESS_TARGET &&
    e.level === 'debug' &&
    e.fields['method'] === 'GET' &&
    String(e.fields['path'] ?? '').startsWith('/api/')
  );
}

/** The URL parameters of `f` (setQuery drops the empty ones). */
function logQuery(f: LogFilters, change: Partial<LogFilters> = {}): Record<string, string> {
  const n = { ...f, ...change };
  return { level: n.level, q: n.q, access: n.access, polls: n.polls ? 'show' : '' };
}

export function parseLogFilters(search: string): LogFilters {
  const p = new URLSearchParams(search);
  const level = p.get('level') ?? '';
  const access = p.get('access');
  return {
    level: LEVELS.includes(level as (typeof LEVELS)[number]) ? level : '',
    q: p.get('q') ?? '',
    access: access === 'hide' || access === 'only' ? access : '',
    polls: p.get('polls') === 'show',
  };
}

export function passes(e: TapEntry, f: LogFilters): boolean {
  if (f.level && (LEVEL_RANK[e.level] ?? 0) < (LEVEL_RANK[f.level] ?? 0)) return false;
  if (f.access === 'hide' && e.target === ACCESS_TARGET) return false;
  if (!f.polls && isPolling(e)) return false;
  if (f.access === 'only' && e.target !== ACCESS_TARGET) return false;
  if (f.q && !`${e.target} ${e.msg} ${JSON.stringify(e.fields)}`.toLowerCase().includes(f.q.toLowerCase()))
    return false;
  return true;
}

export function LogsPage(props: { search: string }) {
  const { role } = useRole();
  return (
    <section aria-labelledby="logs-title">
      <h1 id="logs-title">Logs</h1>
      {role === 'anonymous' ? <NeedsSignIn what="Log records" /> : <LogsContent search={props.search} />}
    </section>
  );
}

function LogsContent(props: { search: string }) {
  const filters = useMemo(() => parseLogFilters(props.search), [props.search]);
  const [entries, setEntries] = useState<TapEntry[]>([]);
  const [dropped, setDropped] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [disabled, setDisabled] = useState(false);
  const [loaded, setLoaded] = useState(false);
  const [paused, setPaused] = useState(false);
  const [follow, setFollow] = useState(true);
  const [qDraft, setQDraft] = useState(filters.q);
  const lastSeq = useRef(0);
  const list = useRef<HTMLDivElement>(null);
  // null: no log store to read (shipping off) or not asked yet.
  const [history, setHistory] = useState<{ entries: TapEntry[]; total: number; partial: boolean } | null>(null);
  const [historyError, setHistoryError] = useState<string | null>(null);

  // The history follows the server-side filters (level, text, access log); polling lines are hidden below as for the tap.
  useEffect(() => {
    let alive = true;
    const params = new URLSearchParams({ level: filters.level, q: filters.q, access: filters.access });
    api<{ entries: TapEntry[]; total: number; partial: boolean }>(`/api/logs/history?${params.toString()}`).then(
      (r) => {
        if (alive) {
          setHistory(r);
          setHistoryError(null);
        }
      },
      (e: unknown) => {
        if (!alive) return;
        setHistory(null);
        setHistoryError(e instanceof ApiError && e.status === 404 ? null : (e as Error).message);
      },
    );
    return () => {
      alive = false;
    };
  }, [filters.level, filters.q, filters.access]);

  useEffect(() => setQDraft(filters.q), [filters.q]);
  useEffect(() => {
    if (qDraft === filters.q) return undefined;
    const t = window.setTimeout(() => setQuery(logQuery(filters, { q: qDraft })), 300);
    return () => window.clearTimeout(t);
  }, [qDraft, filters]);

  useEffect(() => {
    if (paused) return undefined;
    let alive = true;
    let busy = false;
    const load = () => {
      if (busy) return;
      busy = true;
      const since = lastSeq.current;
      api<{ active: boolean; entries: TapEntry[] }>(`/api/logs?limit=${FETCH_LIMIT}${since ? `&since=${since}` : ''}`)
        .then(
          (r) => {
            if (!alive) return;
            setLoaded(true);
            setError(null);
            setDisabled(false);
            if (r.entries.length === 0) return;
            // Sequence numbers are consecutive: a gap after our last one means the ring wrapped before we read.
            const gap = since > 0 ? r.entries[0]!.seq - since - 1 : 0;
            if (gap > 0) setDropped((d) => d + gap);
            lastSeq.current = r.entries.at(-1)!.seq;
            setEntries((old) => [...old, ...r.entries].slice(-KEEP));
          },
          (e: unknown) => {
            if (!alive) return;
            if (e instanceof ApiError && e.status === 404) setDisabled(true);
            else setError((e as Error).message);
          },
        )
        .finally(() => {
          busy = false;
        });
    };
    const stop = everyWhileVisible(load, POLL_MS);
    return () => {
      alive = false;
      stop();
    };
  }, [paused]);

  const shown = useMemo(() => entries.filter((e) => passes(e, filters)).slice(-SHOW), [entries, filters]);
  // Records the tap has too (shipped after it started) are shown once, with the tap's.
  const past = useMemo(() => {
    if (!history) return [];
    const live = new Set(entries.map((e) => `${e.time} ${e.target} ${e.msg}`));
    return history.entries
      .filter((e) => passes(e, filters) && !live.has(`${e.time} ${e.target} ${e.msg}`))
      .slice(-SHOW);
  }, [history, entries, filters]);
  useEffect(() => {
    if (follow && list.current) list.current.scrollTop = list.current.scrollHeight;
  }, [shown, follow]);

  if (disabled)
    return (
      <Empty testId="logs-disabled">
        The log tap is off on this pooler (<code>[web] log_tap_max_entries = 0</code>).
      </Empty>
    );
  return (
    <>
      <form className="filters" role="search" aria-label="Filter log records" onSubmit={(e) => e.preventDefault()}>
        <label>
          Level at least
          <select
            name="level"
            value={filters.level}
            onChange={(e) => setQuery(logQuery(filters, { level: e.target.value }))}
          >
            <option value="">any</option>
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </label>
        <label>
          Text
          <input
            name="q"
            value={qDraft}
            placeholder="in message, target or fields"
            onChange={(e) => setQDraft(e.target.value)}
          />
        </label>
        <label>
          Access log
          <select
            name="access"
            value={filters.access}
            onChange={(e) => setQuery(logQuery(filters, { access: e.target.value as LogFilters['access'] }))}
          >
            <option value="">include</option>
            <option value="hide">hide</option>
            <option value="only">only</option>
          </select>
        </label>
        <label className="check">
          <input
            type="checkbox"
            name="polls"
            checked={filters.polls}
            onChange={(e) => setQuery(logQuery(filters, { polls: e.target.checked }))}
          />{' '}
          Console polling
        </label>
        <label className="check">
          <input type="checkbox" name="follow" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
        </label>
        <button
          type="button"
          className={paused ? '' : 'secondary'}
          aria-pressed={paused}
          onClick={() => setPaused((p) => !p)}
        >
          {paused ? 'Resume' : 'Pause'}
        </button>
      </form>
      <p className="log-status" aria-live="polite">
        <span data-testid="logs-count">{count(shown.length)} shown</span> of {count(entries.length)} received
        {paused && <span className="badge paused">paused</span>}
        {dropped > 0 && (
          <span className="badge paused" data-testid="logs-dropped">
            {count(dropped)} entries dropped
          </span>
        )}
        {error && <span className="error"> · {error}</span>}
        {history && (
          <span data-testid="logs-history-count">
            {' '}
            · {count(past.length)} from the log store (last hour
            {history.total > history.entries.length
              ? `, newest ${count(history.entries.length)} of ${count(history.total)}`
              : ''}
            {history.partial ? ', partial' : ''})
          </span>
        )}
        {historyError && (
          <span className="error" data-testid="logs-history-error">
            {' '}
            · history: {historyError}
          </span>
        )}
      </p>
      <div
        className="log-list"
        ref={list}
        data-testid="log-list"
        tabIndex={0}
        role="log"
        aria-label="Log records, oldest first"
        onWheel={() => setFollow(false)}
      >
        {past.map((e) => (
          <LogLine key={e.seq} e={e} past />
        ))}
        {past.length > 0 && (
          <p className="muted log-divider" data-testid="logs-history-end">
            — above: from the log store; below: live from the tap —
          </p>
        )}
        {!loaded ? (
          <p className="muted">Starting the log tap…</p>
        ) : shown.length === 0 ? (
          <p className="muted" data-testid="logs-empty">
            No record matches.
          </p>
        ) : (
          shown.map((e) => <LogLine key={e.seq} e={e} />)
        )}
      </div>
    </>
  );
}

/** One record: time, level, target, message, fields; `past`: read back from the log store, not from the tap. */
function LogLine(props: { e: TapEntry; past?: boolean }) {
  const { e } = props;
  return (
    <div
      className={`log-line ${e.level}${props.past ? ' past' : ''}`}
      data-testid={props.past ? 'log-line-past' : 'log-line'}
    >
      <span className="time" data-live="">
        {e.time.slice(11, 23)}
      </span>{' '}
      <span className="level">{e.level}</span> <span className="target">{e.target}</span>{' '}
      <span className="msg">{e.msg}</span>{' '}
      <span className="fields" data-live="">
        {Object.entries(e.fields)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ')}
      </span>
    </div>
  );
}
