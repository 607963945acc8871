// A table of API rows: typed columns, sortable headers (aria-sort, keyboard), (i) help, links per row, live cells marked.
import { useMemo, useState, type ReactNode } from 'react';
import type { Row } from '../api';
import { cell, unitOf } from '../format';
import { linkProps } from '../router';
import { Help } from './help';

export interface Column {
  key: string;
  label?: string;
  /** Help text key (defaults to the column key when a text exists). */
  help?: string;
  /** Right-aligned, tabular digits, minimum width. */
  num?: boolean;
  /** The value changes from poll to poll or run to run (pids, ports, ages, counts): data-live (screenshot masks). */
  live?: boolean;
  render?: (r: Row) => ReactNode;
  /** Value used to sort when the rendered value is not the raw one. */
  sortValue?: (r: Row) => number | string | null;
  sortable?: boolean;
  /** A field the API added that this console does not know (shown as it comes, without help). */
  extra?: boolean;
}

export interface Sort {
  key: string;
  order: 'asc' | 'desc';
}

export interface DataTableProps {
  rows: Row[];
  columns: Column[];
  /** Read by screen readers: what the table lists. */
  caption: string;
  testId?: string;
  rowKey?: (r: Row, i: number) => string;
  /** Where a row leads; its first cell becomes a link and the whole row is clickable. */
  rowHref?: (r: Row) => string;
  /** Controlled sort (server-side); without onSort the table sorts its rows itself. */
  sort?: Sort | null;
  onSort?: (s: Sort) => void;
  defaultSort?: Sort;
  empty?: ReactNode;
}

/** Columns for keys the rows carry beyond the known ones (fields the API adds later show up by themselves). */
export function withExtraColumns(known: Column[], rows: Row[], hidden: string[] = []): Column[] {
  const have = new Set([...known.map((c) => c.key), ...hidden]);
  const extra: Column[] = [];
  for (const k of Object.keys(rows[0] ?? {})) {
    if (have.has(k)) continue;
    const isNum = typeof rows[0]![k] === 'number';
    // Durations and sizes the console does not know by name still get their unit (avg_wait_time 1200 -> "1.20 ms").
    const unit = isNum ? unitOf(k) : null;
    extra.push({ key: k, num: isNum, live: isNum, extra: true, ...(unit ? { render: (r: Row) => unit(r[k]) } : {}) });
  }
  return [...known, ...extra];
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

export function DataTable(props: DataTableProps) {
  const [localSort, setLocalSort] = useState<Sort | null>(props.defaultSort ?? null);
  const sort = props.onSort ? (props.sort ?? null) : localSort;
  const onSort = props.onSort ?? setLocalSort;
  const rows = useMemo(() => {
    if (props.onSort || !sort) return props.rows;
    const col = props.columns.find((c) => c.key === sort.key);
    const value = (r: Row) => (col?.sortValue ? col.sortValue(r) : r[sort.key]);
    const sign = sort.order === 'asc' ? 1 : -1;
    return [...props.rows].sort((a, b) => sign * compare(value(a), value(b)));
  }, [props.rows, props.columns, props.onSort, sort]);
  if (props.rows.length === 0)
    return (
      <div className="empty" data-testid={props.testId ? `${props.testId}-empty` : undefined}>
        {props.empty ?? 'No rows.'}
      </div>
    );
  return (
    <div className="table-wrap">
      <table data-testid={props.testId}>
        <caption className="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => {
              const active = sort?.key === c.key;
              const ariaSort = active ? (sort!.order === 'asc' ? 'ascending' : 'descending') : 'none';
              const label = c.label ?? c.key;
              const sortable = c.sortable !== false;
              return (
                <th
                  key={c.key}
                  className={c.num ? 'num' : undefined}
                  aria-sort={sortable ? ariaSort : undefined}
                  scope="col"
                  data-extra={c.extra ? '' : undefined}
                >
                  {sortable ? (
                    <button
                      type="button"
                      className="sort"
                      onClick={() =>
                        onSort({
                          key: c.key,
                          order: active && sort!.order === 'asc' ? 'desc' : active ? 'asc' : c.num ? 'desc' : 'asc',
                        })
                      }
                    >
                      {label}
                      <span aria-hidden="true" className="sort-mark">
                        {active ? (sort!.order === 'asc' ? '▲' : '▼') : ''}
                      </span>
                    </button>
                  ) : (
                    label
                  )}
                  <Help id={c.help ?? c.key} label={label} />
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => {
            const href = props.rowHref?.(r);
            return (
              <tr
                key={props.rowKey ? props.rowKey(r, i) : i}
                className={href ? 'clickable' : undefined}
                onClick={
                  href
                    ? (e) => {
                        if (!(e.target as HTMLElement).closest('a,button')) linkProps(href).onClick(e);
                      }
                    : undefined
                }
              >
                {props.columns.map((c, ci) => {
                  const content = c.render ? c.render(r) : cell(r[c.key]);
                  return (
                    <td key={c.key} className={c.num ? 'num' : undefined} data-live={c.live ? '' : undefined}>
                      {ci === 0 && href ? <a {...linkProps(href)}>{content}</a> : content}
                    </td>
                  );
                })}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
