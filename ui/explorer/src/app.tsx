// The explorer's page: query bar and time range, histogram, results; the whole view is kept in the URL.
import { useCallback, useEffect, useState } from 'react';
import { ApiError, call, type Field, type Limits, type SearchAnswer, type UiEvent } from './api';
import { AggsPanel } from './aggs-panel';
import { ContextView } from './context-view';
import { ExportDialog } from './export-dialog';
import { SavedQueries } from './saved-queries';
import { FieldSidebar } from './field-sidebar';
import { Histogram } from './histogram';
import { PatternsPanel } from './patterns-panel';
import { QueryEditor, type QueryError, type ValueSuggestions } from './query-editor';
import { ResultsTable } from './results-table';
import { addTerm, quoteValue } from './seql';
import { useTheme } from './theme';
import { TimePicker } from './time-picker';
import { resolve } from './time';
import { readUrl, toSearch, writeUrl, type ViewState } from './url-state';
import { useSearch } from './use-search';
import { useTail } from './use-tail';

/** Values offered when completing `field:`; the server keeps the most frequent ones. */
const SUGGEST_SIZE = 50;
/** Newest documents read for the written spelling of the offered values. */
const SPELLING_SAMPLE = 200;

/** The string values of a (dotted) field in a document, arrays flattened. */
function fieldValues(data: unknown, field: string): string[] {
  let v: unknown = data;
  for (const part of field.split('.'))
    v = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[part] : undefined;
  const out: string[] = [];
  for (const x of Array.isArray(v) ? v : [v])
    if (typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean') out.push(String(x));
  return out;
}

interface AggAnswer {
  aggregations: { buckets: { key: string; value: number }[]; buckets_total: number }[];
}

/** The pooler pool a record is about: its `pool` ("user@database", as the pooler logs it), else `user` and `database`. */
function poolOf(data: UiEvent['data']): { database: string; user: string } | null {
  if (typeof data !== 'object' || data === null) return null;
  const pool = data['pool'];
  if (typeof pool === 'string') {
    const at = pool.lastIndexOf('@');
    if (at > 0 && at < pool.length - 1) return { user: pool.slice(0, at), database: pool.slice(at + 1) };
  }
  const { user, database } = data;
  return typeof user === 'string' && typeof database === 'string' && user && database ? { user, database } : null;
}

/** The console's page of a pool: /pools/<database>/<user>, each part URI-encoded. */
function consolePoolHref(base: string, p: { database: string; user: string }): string {
  return `${base.replace(/\/+$/, '')}/pools/${encodeURIComponent(p.database)}/${encodeURIComponent(p.user)}`;
}

function errorOf(e: ApiError | null): QueryError | null {
  if (!e || e.code !== 'query_syntax') return null;
  return {
    message: e.message.replace(/^query syntax error at position \d+: /, ''),
    position: typeof e.details.position === 'number' ? e.details.position : null,
  };
}

export function App() {
  const theme = useTheme();
  const [view, setViewState] = useState<ViewState>(() => readUrl());
  const [draft, setDraft] = useState(view.q);
  const [fields, setFields] = useState<Field[]>([]);
  const [limits, setLimits] = useState<Limits | null>(null);
  const [tick, setTick] = useState(0);
  const [metaError, setMetaError] = useState<string | null>(null);
  const [fieldsOpen, setFieldsOpen] = useState(false);
  const [contextOf, setContextOf] = useState<UiEvent | null>(null);
  const [dialog, setDialog] = useState<'export' | 'saved' | null>(null);
  const [consoleUrl, setConsoleUrl] = useState<string | null>(null);

  const setView = useCallback((next: ViewState, replace = false) => {
    setViewState(next);
    writeUrl(next, replace);
  }, []);

  useEffect(() => {
    writeUrl(view, true);
    const onPop = () => {
      const v = readUrl();
      setViewState(v);
      setDraft(v.q);
    };
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
    // Only once: the URL read at start is written back in its normal form.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    call<{ console_url: string | null }>('GET', '/links').then(
      (r) => setConsoleUrl(r.console_url),
      () => setConsoleUrl(null),
    );
    Promise.all([call<Limits>('GET', '/limits'), call<{ fields: Field[] }>('GET', '/fields')]).then(
      ([l, f]) => {
        setLimits(l);
        setFields(f.fields);
      },
      (err: Error) => setMetaError(err.message),
    );
  }, [tick]);

  const pageSize = Math.min(1000, limits?.max_search_limit ?? 1000);
  const maxTotal = limits?.max_search_total_limit ?? 100_000;
  const s = useSearch(view.q, view.range, pageSize, maxTotal, tick, limits !== null);
  const tail = useTail(view.q, view.live && !errorOf(s.error));

  const runQuery = (q: string) => {
    if (q === view.q) setTick((t) => t + 1);
    else setView({ ...view, q });
  };

  const suggestValues = useCallback(
    async (field: string, prefix: string): Promise<ValueSuggestions> => {
      const { from, to } = resolve(view.range);
      const narrow = prefix && quoteValue(prefix) === prefix ? `${field}:${prefix}*` : '';
      // Keyword values are indexed lowercased, so the buckets' keys are too; the newest documents holding the field
      // give each key back as it was written (a key none of them holds stays as indexed).
      const [r, sample] = await Promise.all([
        call<AggAnswer>('POST', '/aggregation', {
          query: narrow,
          from,
          to,
          size: SUGGEST_SIZE,
          aggregations: [{ field, func: 'count' }],
        }),
        call<SearchAnswer>('POST', '/search', {
          query: narrow || `_exists_:${field}`,
          from,
          to,
          limit: SPELLING_SAMPLE,
          with_total: false,
        }).catch(() => null),
      ]);
      const spelled = new Map<string, string>();
      for (const e of sample?.events ?? []) {
        for (const v of fieldValues(e.data, field)) if (!spelled.has(v.toLowerCase())) spelled.set(v.toLowerCase(), v);
      }
      const a = r.aggregations[0]!;
      const p = prefix.toLowerCase();
      const values = a.buckets
        .filter((b) => b.key.toLowerCase().startsWith(p))
        .map((b) => ({ key: spelled.get(b.key) ?? b.key, count: b.value }));
      return { values, capped: a.buckets_total > a.buckets.length };
    },
    [view.range],
  );

  /** Adds a condition from the sidebar and runs the query. */
  const filter = (field: string, value: string, negate: boolean) => {
    const q = addTerm(view.q, field, value, negate);
    setDraft(q);
    setFieldsOpen(false);
    setView({ ...view, q });
  };

  const toggleColumn = (field: string) =>
    setView(
      { ...view, cols: view.cols.includes(field) ? view.cols.filter((c) => c !== field) : [...view.cols, field] },
      true,
    );

  const queryError = errorOf(s.error);
  const otherError = s.error && !queryError ? s.error : null;

  return (
    <div className="app" data-testid="app" data-loading={s.loading ? 'true' : 'false'}>
      <header className="topbar">
        <a className="brand" href="/" aria-label="tidepool log explorer, a fresh view">
          tidepool <span>logs</span>
        </a>
        <QueryEditor
          value={draft}
          onChange={setDraft}
          onSubmit={runQuery}
          error={queryError}
          fields={fields}
          suggestValues={suggestValues}
        />
        <div className="bar-actions">
          <TimePicker range={view.range} onChange={(range) => setView({ ...view, range })} />
          <button type="button" className="primary" data-testid="run" onClick={() => runQuery(draft)}>
            Search
          </button>
          <button
            type="button"
            className="theme-btn"
            data-testid="theme-toggle"
            aria-label={`Theme: ${theme.choice}`}
            title={`Theme: ${theme.choice} (click to change)`}
            onClick={() =>
              theme.setChoice(
                theme.choice === 'system'
                  ? theme.scheme === 'dark'
                    ? 'light'
                    : 'dark'
                  : theme.choice === 'dark'
                    ? 'light'
                    : 'system',
              )
            }
          >
            {theme.scheme === 'dark' ? '☾' : '☀'}
          </button>
        </div>
      </header>
      {metaError && (
        <div className="banner bad" role="alert">
          The UI backend did not answer: {metaError}
        </div>
      )}
      {otherError && (
        <div className="banner bad" role="alert" data-testid="search-error">
          {otherError.message}
          {otherError.code === 'logstore_unavailable' || otherError.code === 'logstore_timeout' ? ' ' : ''}
          <button type="button" onClick={() => setTick((t) => t + 1)}>
            Retry
          </button>
        </div>
      )}
      <div className="summary" data-testid="summary" aria-live="polite">
        <button
          type="button"
          className="fields-btn"
          aria-expanded={fieldsOpen}
          onClick={() => setFieldsOpen(!fieldsOpen)}
        >
          Fields
        </button>
        {view.live && !s.error && (
          <span className="live-note" data-testid="live-status">
            Live: <strong data-testid="live-count">{tail.events.length.toLocaleString('en-US')}</strong> new ·{' '}
            {tail.status === 'error' ? <span className="bad">{tail.error}</span> : tail.status} ·{' '}
          </span>
        )}
        {s.loading ? (
          'Searching…'
        ) : s.error ? (
          queryError ? (
            'The query was not run: fix it at the marked position.'
          ) : (
            'The search failed.'
          )
        ) : (
          <>
            <strong data-testid="total">{s.total.toLocaleString('en-US')}</strong> matches
            {s.events.length < s.total && <> · {s.events.length.toLocaleString('en-US')} loaded</>} ·{' '}
            <span data-live>{s.tookMs} ms</span>
            {s.partial && <span className="badge warn"> partial: a store did not answer</span>}
          </>
        )}
        <div className="tabs" role="tablist" aria-label="View">
          <button
            type="button"
            role="tab"
            aria-selected={view.tab === 'events'}
            onClick={() => setView({ ...view, tab: 'events' })}
          >
            Events
          </button>
          <button
            type="button"
            role="tab"
            aria-selected={view.tab === 'aggs'}
            data-testid="tab-aggs"
            onClick={() => setView({ ...view, tab: 'aggs', live: false })}
          >
            Aggregations
          </button>
          <button
            type="button"
            role="tab"
            aria-selected={view.tab === 'patterns'}
            data-testid="tab-patterns"
            onClick={() => setView({ ...view, tab: 'patterns', live: false })}
          >
            Patterns
          </button>
        </div>
        <div className="tools">
          <button
            type="button"
            data-testid="live"
            className={view.live ? 'live-on' : undefined}
            aria-pressed={view.live}
            onClick={() => setView({ ...view, live: !view.live, tab: 'events' })}
          >
            {view.live ? '■ Stop live' : '▶ Live'}
          </button>
          <button type="button" data-testid="export-open" onClick={() => setDialog('export')}>
            Export
          </button>
          <button type="button" data-testid="saved-open" onClick={() => setDialog('saved')}>
            Saved
          </button>
        </div>
      </div>
      {s.from && !s.error && (
        <Histogram
          buckets={s.buckets}
          from={s.from}
          to={s.to}
          interval={s.interval}
          scheme={theme.scheme}
          onZoom={(from, to) => setView({ ...view, range: { rel: null, from, to } })}
        />
      )}
      <main className="body">
        <FieldSidebar
          fields={fields}
          query={view.q}
          from={s.from}
          to={s.to}
          columns={view.cols}
          onToggleColumn={toggleColumn}
          onFilter={filter}
          open={fieldsOpen}
          onClose={() => setFieldsOpen(false)}
        />
        {view.tab === 'aggs' ? (
          <AggsPanel
            form={view.agg}
            onForm={(agg) => setView({ ...view, agg }, true)}
            fields={fields}
            query={view.q}
            from={s.from}
            to={s.to}
            scheme={theme.scheme}
          />
        ) : view.tab === 'patterns' ? (
          <PatternsPanel query={view.q} from={s.from} to={s.to} />
        ) : (
          <section className="results-pane" aria-label="Results">
            <ResultsTable
              key={view.live ? 'live' : 'search'}
              events={view.live ? tail.events : s.events}
              columns={view.cols}
              follow={view.live}
              dropped={tail.dropped}
              onRemoveColumn={(c) => setView({ ...view, cols: view.cols.filter((x) => x !== c) }, true)}
              onNearEnd={view.live ? undefined : s.loadMore}
              renderDetail={(e) => (
                <div className="r-actions">
                  <button type="button" data-testid="show-context" onClick={() => setContextOf(e)}>
                    Show context
                  </button>
                  {consoleUrl && poolOf(e.data) && (
                    <a
                      href={consolePoolHref(consoleUrl, poolOf(e.data)!)}
                      target="_blank"
                      rel="noreferrer"
                      data-testid="console-pool-link"
                    >
                      Pool {poolOf(e.data)!.database}/{poolOf(e.data)!.user} in the console ↗
                    </a>
                  )}
                </div>
              )}
              footer={
                view.live ? (
                  tail.events.length === 0 ? (
                    <div className="r-empty" data-testid="live-waiting">
                      Waiting for new documents that match the query…
                    </div>
                  ) : null
                ) : s.loadingMore ? (
                  <div className="r-foot">Loading more…</div>
                ) : !s.loading && s.events.length === 0 && !s.error ? (
                  <div className="r-empty" data-testid="no-results">
                    No documents match this query in this time range.
                  </div>
                ) : null
              }
            />
          </section>
        )}
      </main>
      {dialog === 'export' && (
        <ExportDialog
          query={view.q}
          from={s.from}
          to={s.to}
          total={s.total}
          maxExport={limits?.max_export_limit ?? 100_000}
          columns={view.cols}
          fieldNames={fields.map((f) => f.name)}
          onClose={() => setDialog(null)}
        />
      )}
      {dialog === 'saved' && (
        <SavedQueries
          search={toSearch(view)}
          query={view.q}
          onClose={() => setDialog(null)}
          onOpen={(search) => {
            const v = readUrl(search);
            setDialog(null);
            setDraft(v.q);
            setView(v);
          }}
        />
      )}
      {contextOf && (
        <ContextView event={contextOf} fieldNames={fields.map((f) => f.name)} onClose={() => setContextOf(null)} />
      )}
    </div>
  );
}
