// The field sidebar: the log store's fields; one opens to its top values in the current matches with their share,
// each adding `field:value` or `not field:value` to the query, and a field can be shown as a column.
import { useEffect, useState } from 'react';
import { call, type Field } from './api';

/** Top values fetched per opened field. */
export const TOP_VALUES = 5;

interface TopAnswer {
  total: number;
  aggregations: { buckets: { key: string; value: number }[]; buckets_total: number; not_exists: number }[];
}

export interface FieldSidebarProps {
  fields: Field[];
  query: string;
  from: string;
  to: string;
  columns: string[];
  onToggleColumn: (field: string) => void;
  onFilter: (field: string, value: string, negate: boolean) => void;
  /** Phone layout: the sidebar is a panel opened from a button. */
  open: boolean;
  onClose: () => void;
}

function TopValues(props: {
  field: string;
  query: string;
  from: string;
  to: string;
  onFilter: FieldSidebarProps['onFilter'];
}) {
  const [answer, setAnswer] = useState<TopAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    setAnswer(null);
    setError(null);
    call<TopAnswer>(
      'POST',
      '/aggregation',
      {
        query: props.query,
        from: props.from,
        to: props.to,
        size: TOP_VALUES,
        aggregations: [{ field: props.field, func: 'count' }],
      },
      ctl.signal,
    ).then(setAnswer, (err: Error) => {
      if (!ctl.signal.aborted) setError(err.message);
    });
    return () => ctl.abort();
  }, [props.field, props.query, props.from, props.to]);
  if (error)
    return (
      <p className="fs-note bad" role="alert">
        {error}
      </p>
    );
  if (!answer) return <p className="fs-note">Counting…</p>;
  const a = answer.aggregations[0]!;
  if (answer.total === 0) return <p className="fs-note">No matches.</p>;
  return (
    <div className="fs-values" data-testid="top-values">
      <p className="fs-note">
        Top {a.buckets.length} of {a.buckets_total.toLocaleString('en-US')} values in{' '}
        {answer.total.toLocaleString('en-US')} matches
        {a.not_exists > 0 && <>; missing in {a.not_exists.toLocaleString('en-US')}</>}
      </p>
      <ul>
        {a.buckets.map((b) => {
          const share = b.value / answer.total;
          return (
            <li key={b.key} data-testid="top-value" data-key={b.key} data-count={b.value}>
              <div className="fs-vline">
                <span className="fs-key" title={b.key}>
                  {b.key}
                </span>
                <span className="fs-share">{(share * 100).toFixed(1)}%</span>
                <button
                  type="button"
                  className="fs-act"
                  aria-label={`Filter for ${props.field}: ${b.key}`}
                  title="Only these"
                  onClick={() => props.onFilter(props.field, b.key, false)}
                >
                  +
                </button>
                <button
                  type="button"
                  className="fs-act"
                  aria-label={`Filter out ${props.field}: ${b.key}`}
                  title="Not these"
                  onClick={() => props.onFilter(props.field, b.key, true)}
                >
                  −
                </button>
              </div>
              <div className="fs-bar" aria-hidden="true">
                <span style={{ width: `${Math.max(1, share * 100)}%` }} />
              </div>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

export function FieldSidebar(props: FieldSidebarProps) {
  const [filter, setFilter] = useState('');
  const [opened, setOpened] = useState<string | null>(null);
  const shown = props.fields.filter((f) => f.name.toLowerCase().includes(filter.toLowerCase()));
  return (
    <aside className={`field-sidebar${props.open ? ' open' : ''}`} aria-label="Fields" data-testid="field-sidebar">
      <div className="fs-head">
        <input
          type="search"
          placeholder="Filter fields"
          aria-label="Filter fields"
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
        />
        <button type="button" className="fs-close" aria-label="Close the fields" onClick={props.onClose}>
          ×
        </button>
      </div>
      <ul className="fs-list">
        {shown.map((f) => {
          const isOpen = opened === f.name;
          const isCol = props.columns.includes(f.name);
          return (
            <li key={f.name} data-testid="field" data-field={f.name}>
              <div className="fs-fline">
                <button
                  type="button"
                  className="fs-name"
                  aria-expanded={isOpen}
                  onClick={() => setOpened(isOpen ? null : f.name)}
                >
                  <span className="fs-type" aria-hidden="true" title={f.types.join(', ')}>
                    {f.type === 'keyword' ? 'k' : f.type === 'text' ? 't' : f.type.slice(0, 1)}
                  </span>
                  {f.name}
                </button>
                <button
                  type="button"
                  className={`fs-col${isCol ? ' on' : ''}`}
                  aria-pressed={isCol}
                  aria-label={`${isCol ? 'Remove' : 'Add'} column ${f.name}`}
                  title={isCol ? 'Remove the column' : 'Show as a column'}
                  onClick={() => props.onToggleColumn(f.name)}
                >
                  {isCol ? '✓ col' : '+ col'}
                </button>
              </div>
              {isOpen && (
                <TopValues
                  field={f.name}
                  query={props.query}
                  from={props.from}
                  to={props.to}
                  onFilter={props.onFilter}
                />
              )}
            </li>
          );
        })}
        {shown.length === 0 && <li className="fs-note">No field matches “{filter}”.</li>}
      </ul>
    </aside>
  );
}
