// A table of API rows with the SHOW column names as headers.
import type { Row } from '../api';

export function RowTable(props: { rows: Row[]; columns?: string[]; onRowClick?: (r: Row) => void; testId?: string }) {
  const columns = props.columns ?? Object.keys(props.rows[0] ?? {});
  if (props.rows.length === 0) return <p className="muted">No rows.</p>;
  return (
    <table data-testid={props.testId}>
      <thead>
        <tr>{columns.map((c) => <th key={c}>{c}</th>)}</tr>
      </thead>
      <tbody>
        {props.rows.map((r, i) => (
          <tr key={i} className={props.onRowClick ? 'clickable' : ''} onClick={() => props.onRowClick?.(r)}>
            {columns.map((c) => <td key={c}>{format(r[c])}</td>)}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function format(v: Row[string] | undefined): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return String(v);
}
