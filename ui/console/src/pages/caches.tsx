// Caches (Sso or Admin): prepared statements with uses and the servers' hit rate, SQL text on click with a copy button, the SQL-text cache, top queries.
import { useEffect, useState } from 'react';
import { api, type Row } from '../api';
import { Card } from '../components/card';
import { DataTable, withExtraColumns, type Column } from '../components/data-table';
import { NeedsSignIn } from '../components/needs-sign-in';
import { Empty, Gate } from '../components/states';
import { bytes, count, micros, millis, percent } from '../format';
import { useRole } from '../role';
import { usePolling } from '../use-polling';

export function CachesPage() {
  const { role } = useRole();
  return (
    <section aria-labelledby="caches-title">
      <h1 id="caches-title">Caches</h1>
      {role === 'anonymous' ? <NeedsSignIn what="Prepared statements and query texts" /> : <CachesContent />}
    </section>
  );
}

function CachesContent() {
  const servers = usePolling<Row[]>('/api/servers');
  const prepared = usePolling<Row[]>('/api/prepared');
  const interner = usePolling<Row[]>('/api/interner');
  const internerTop = usePolling<Row[]>('/api/interner/top');
  const topQueries = usePolling<Row[]>('/api/top/queries');
  const [selected, setSelected] = useState<string | null>(null);
  let hits = 0;
  let misses = 0;
  for (const s of servers.data ?? []) {
    hits += Number(s['prepare_cache_hit']) || 0;
    misses += Number(s['prepare_cache_miss']) || 0;
  }
  const showText = (r: Row) => (
    <button
      type="button"
      className="link mono"
      aria-label={`Show the SQL of ${String(r['hash'])}`}
      onClick={() => setSelected(String(r['hash']))}
    >
      {String(r['hash'])}
    </button>
  );
  const preparedColumns: Column[] = [
    { key: 'pool' },
    { key: 'hash', label: 'statement', render: showText },
    { key: 'name', live: true },
    { key: 'kind' },
    { key: 'count_used', label: 'uses', num: true, live: true },
    {
      key: 'hit_rate',
      label: 'hit rate',
      help: 'statement_hit_rate',
      num: true,
      live: true,
      render: (r) => percent(typeof r['hit_rate'] === 'number' ? r['hit_rate'] : null),
    },
    {
      key: 'cache_hits',
      label: 'hits',
      help: 'statement_hits',
      num: true,
      live: true,
      render: (r) => count(r['cache_hits']),
    },
    {
      key: 'cache_misses',
      label: 'misses',
      help: 'statement_misses',
      num: true,
      live: true,
      render: (r) => count(r['cache_misses']),
    },
  ];
  // Per statement: hits / (hits + misses), null before its first use on a server (sorts last).
  const preparedRows = (prepared.data ?? []).map((r) => {
    const h = Number(r['cache_hits']) || 0;
    const m = Number(r['cache_misses']) || 0;
    return { ...r, hit_rate: h + m === 0 ? null : h / (h + m) };
  });
  return (
    <>
      <div className="cards" data-testid="cache-cards">
        <Card
          label="Server cache hit rate"
          help="hit_rate"
          value={percent(hits + misses === 0 ? null : hits / (hits + misses))}
          detail={`${count(hits)} hits · ${count(misses)} misses`}
        />
        <Card
          label="Prepared statements"
          help="count_used"
          value={count(prepared.data?.length ?? null)}
          detail={`${count((prepared.data ?? []).reduce((n, r) => n + (Number(r['count_used']) || 0), 0))} uses`}
        />
        <Card
          label="SQL-text cache"
          help="interner"
          value={count((interner.data ?? []).reduce((n, r) => n + (Number(r['entries']) || 0), 0))}
          detail={bytes((interner.data ?? []).reduce((n, r) => n + (Number(r['bytes']) || 0), 0))}
        />
      </div>
      {selected && <SqlText hash={selected} onClose={() => setSelected(null)} />}
      <h2>Prepared statements</h2>
      <Gate
        loading={prepared.loading}
        error={prepared.error}
        hasData={prepared.data !== null}
        what="prepared statements"
      >
        {() => (
          <DataTable
            caption="Prepared statements"
            testId="prepared-table"
            rows={preparedRows}
            columns={withExtraColumns(preparedColumns, preparedRows)}
            rowKey={(r, i) => `${String(r['pool'])}/${String(r['hash'])}/${String(r['name'])}/${i}`}
            defaultSort={{ key: 'count_used', order: 'desc' }}
            empty={
              <Empty testId="prepared-empty">
                No prepared statements yet: they appear when clients use Parse (named or unnamed) or PREPARE.
              </Empty>
            }
          />
        )}
      </Gate>
      <h2>Top queries</h2>
      <Gate loading={topQueries.loading} error={topQueries.error} hasData={topQueries.data !== null} what="top queries">
        {() => (
          <DataTable
            caption="Most used queries"
            testId="top-queries-table"
            rows={topQueries.data!}
            columns={[
              { key: 'hash', label: 'statement', render: showText },
              // The same text in two pools is two rows: the pool tells them apart.
              { key: 'pool' },
              // protocol or sql: a prepared statement; simple: simple-protocol queries by fingerprint (literals shown as ?).
              { key: 'kind' },
              {
                key: 'preview',
                label: 'SQL (first 120 characters)',
                render: (r) => <code className="sql-preview">{String(r['preview'] ?? r['query'] ?? '')}</code>,
              },
              {
                key: 'count',
                label: 'uses',
                num: true,
                live: true,
                render: (r) => count(r['count'] ?? r['count_used']),
              },
              ...('total_time_us' in (topQueries.data![0] ?? {})
                ? [
                    {
                      key: 'total_time_us',
                      label: 'total time',
                      num: true,
                      live: true,
                      render: (r: Row) => micros(r['total_time_us']),
                    },
                    {
                      key: 'avg_time_us',
                      label: 'mean time',
                      num: true,
                      live: true,
                      render: (r: Row) => micros(r['avg_time_us']),
                    },
                  ]
                : []),
            ]}
            rowKey={(r, i) => `${String(r['hash'])}/${i}`}
            empty={<Empty testId="top-queries-empty">No queries recorded yet.</Empty>}
          />
        )}
      </Gate>
      <h2>SQL-text cache</h2>
      <Gate
        loading={interner.loading}
        error={interner.error}
        hasData={interner.data !== null}
        what="the SQL-text cache"
      >
        {() => (
          <DataTable
            caption="SQL-text cache by kind"
            testId="interner-table"
            rows={interner.data!}
            columns={[
              { key: 'kind' },
              { key: 'entries', num: true, live: true },
              { key: 'bytes', num: true, live: true, render: (r) => bytes(r['bytes']) },
            ]}
            rowKey={(r) => String(r['kind'])}
            empty={<Empty>The SQL-text cache is empty.</Empty>}
          />
        )}
      </Gate>
      <Gate
        loading={internerTop.loading}
        error={internerTop.error}
        hasData={internerTop.data !== null}
        what="the largest cached texts"
      >
        {() =>
          internerTop.data!.length === 0 ? null : (
            <DataTable
              caption="Largest cached SQL texts"
              testId="interner-top-table"
              rows={internerTop.data!}
              columns={[
                { key: 'hash', render: showText },
                { key: 'kind' },
                { key: 'bytes', num: true, live: true, render: (r) => bytes(r['bytes']) },
                { key: 'idle_ms', label: 'idle', num: true, live: true, render: (r) => millis(r['idle_ms']) },
                {
                  key: 'query',
                  label: 'SQL',
                  render: (r) => <code className="sql-preview">{String(r['query'] ?? '').slice(0, 120)}</code>,
                },
              ]}
              rowKey={(r, i) => `${String(r['hash'])}/${i}`}
            />
          )
        }
      </Gate>
    </>
  );
}

function SqlText(props: { hash: string; onClose: () => void }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    let alive = true;
    setText(null);
    setError(null);
    setCopied(false);
    api<{ hash: string; query: string | null }>(`/api/prepared/text/${encodeURIComponent(props.hash)}`).then(
      (r) => {
        if (alive) setText(r.query ?? '');
      },
      (e: Error) => {
        if (alive) setError(e.message);
      },
    );
    return () => {
      alive = false;
    };
  }, [props.hash]);
  const copy = async () => {
    if (text === null) return;
    await navigator.clipboard.writeText(text);
    setCopied(true);
  };
  return (
    <div className="panel sql-panel" role="region" aria-label={`SQL of statement ${props.hash}`} data-testid="sql-text">
      <div className="panel-head">
        <h3>
          Statement <code>{props.hash}</code>
        </h3>
        <button type="button" onClick={() => void copy()} disabled={text === null}>
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" className="secondary" onClick={props.onClose}>
          Close
        </button>
      </div>
      {error ? (
        <p className="error">{error}</p>
      ) : text === null ? (
        <p className="muted">Loading…</p>
      ) : (
        <pre className="sql">{text}</pre>
      )}
    </div>
  );
}
