// The results: a virtualized table (only the rows in view are in the DOM), chosen columns, rows that open to their JSON.
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import type { UiEvent } from './api';
import { utc } from './time';

export const ROW_HEIGHT = 28;
/** Rows drawn above and below the visible ones. */
const OVERSCAN = 8;

export interface ResultsTableProps {
  events: UiEvent[];
  columns: string[];
  onRemoveColumn: (c: string) => void;
  /** Called when the view comes near the last loaded row (load the next page). */
  onNearEnd?: () => void;
  /** Tail mode: stay at the bottom as rows arrive, unless the user scrolled up. */
  follow?: boolean;
  /** Tail mode: rows dropped from the top so far (the view moves up by as much, to stay on the same rows). */
  dropped?: number;
  /** What an opened row shows under its JSON (context, filter buttons). */
  renderDetail?: (e: UiEvent) => ReactNode;
  footer?: ReactNode;
}

/** A field of a document: the flat key when present ("a.b"), else the nested path. */
export function fieldOf(data: unknown, field: string): unknown {
  if (typeof data !== 'object' || data === null) return undefined;
  const obj = data as Record<string, unknown>;
  if (field in obj) return obj[field];
  let v: unknown = obj;
  for (const part of field.split('.')) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

export function cellText(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Where a log record keeps its level and its message, first found first (pino, Elasticsearch ECS, syslog shippers). */
const LEVEL_FIELDS = ['level', 'severity', 'lvl', 'log.level', 'levelname'];
const MESSAGE_FIELDS = ['message', 'msg', 'log', 'text', 'event.original'];
/** Not repeated among the other fields of a row: the row's time column shows them. */
const TIME_FIELDS = new Set(['timestamp', 'time', 'ts', '@timestamp']);
/** pino's numeric levels. */
const PINO_LEVELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

function firstOf(data: unknown, names: readonly string[]): { name: string; value: unknown } | null {
  for (const name of names) {
    const value = fieldOf(data, name);
    if (value !== undefined && value !== null && value !== '') return { name, value };
  }
  return null;
}

/** The record's level, lowercased, with the class its colour comes from (error, warn, info, debug) or none. */
export function levelOf(data: unknown): { text: string; tone: string } | null {
  const f = firstOf(data, LEVEL_FIELDS);
  if (!f || (typeof f.value !== 'string' && typeof f.value !== 'number')) return null;
  const text = typeof f.value === 'number' ? (PINO_LEVELS[f.value] ?? String(f.value)) : f.value.toLowerCase();
  const tone = /^(fatal|panic|crit|critical|alert|emerg|emergency|err|error)$/.test(text)
    ? 'error'
    : /^(warn|warning)$/.test(text)
      ? 'warn'
      : /^(info|notice|information)$/.test(text)
        ? 'info'
        : /^(debug|trace|verbose)$/.test(text)
          ? 'debug'
          : 'other';
  return { text, tone };
}

/** A row without chosen columns: the message in full view, then the record's other fields as `key=value`. */
function summary(data: UiEvent['data']): { message: string; rest: string } {
  if (typeof data !== 'object' || data === null) return { message: String(data), rest: '' };
  const msg = firstOf(data, MESSAGE_FIELDS);
  const lvl = firstOf(data, LEVEL_FIELDS);
  const rest = Object.entries(data)
    .filter(([k]) => k !== msg?.name && k !== lvl?.name && !TIME_FIELDS.has(k))
    .map(([k, v]) => `${k}=${cellText(v)}`)
    .join('  ');
  return { message: msg ? cellText(msg.value) : '', rest };
}

/** Index of the last row whose top is at or above y (offsets ascending). */
function rowAt(offsets: number[], y: number): number {
  let lo = 0;
  let hi = offsets.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (offsets[mid]! <= y) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export function ResultsTable(props: ResultsTableProps) {
  const scroller = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewHeight, setViewHeight] = useState(600);
  const [open, setOpen] = useState<Set<string>>(() => new Set());
  const [heights, setHeights] = useState<Map<string, number>>(() => new Map());
  const atBottom = useRef(true);
  /** Tail: rows that arrived while the user was scrolled up. */
  const [seen, setSeen] = useState(0);
  const { events } = props;

  // Offsets of each row's top (opened rows take their measured height) and the total height.
  const offsets = useMemo(() => {
    const out = new Array<number>(events.length + 1);
    let y = 0;
    for (let i = 0; i < events.length; i++) {
      out[i] = y;
      const e = events[i]!;
      y += open.has(e.id) ? (heights.get(e.id) ?? ROW_HEIGHT * 6) : ROW_HEIGHT;
    }
    out[events.length] = y;
    return out;
  }, [events, open, heights]);
  const total = offsets[events.length]!;

  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return undefined;
    const ro = new ResizeObserver(() => setViewHeight(el.clientHeight));
    ro.observe(el);
    setViewHeight(el.clientHeight);
    return () => ro.disconnect();
  }, []);

  // Tail: new rows below keep the bottom in view only if it was in view; otherwise the scroll position stays.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (props.follow && el && atBottom.current) {
      el.scrollTop = el.scrollHeight;
      setSeen(events.length);
    }
  }, [events, props.follow]);
  const unseen = props.follow ? Math.max(0, events.length - seen) : 0;

  const droppedBefore = useRef(props.dropped ?? 0);
  useLayoutEffect(() => {
    const el = scroller.current;
    const delta = (props.dropped ?? 0) - droppedBefore.current;
    droppedBefore.current = props.dropped ?? 0;
    if (el && delta > 0 && !atBottom.current) {
      el.scrollTop = Math.max(0, el.scrollTop - delta * ROW_HEIGHT);
      setSeen((n) => Math.max(0, n - delta));
    }
  }, [props.dropped]);

  useEffect(() => {
    if (events.length === 0) {
      setOpen(new Set());
      scroller.current?.scrollTo({ top: 0 });
    }
  }, [events.length]);

  const first = events.length ? Math.max(0, rowAt(offsets, scrollTop) - OVERSCAN) : 0;
  const last = events.length ? Math.min(events.length - 1, rowAt(offsets, scrollTop + viewHeight) + OVERSCAN) : -1;
  const nearEnd = props.onNearEnd;
  useEffect(() => {
    if (nearEnd && events.length > 0 && last >= events.length - 1 - OVERSCAN * 4) nearEnd();
  }, [last, events.length, nearEnd]);

  const measure = useCallback((id: string, el: HTMLDivElement | null) => {
    if (!el) return;
    const h = el.offsetHeight;
    setHeights((m) => (m.get(id) === h ? m : new Map(m).set(id, h)));
  }, []);

  const toggle = (id: string) =>
    setOpen((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });

  const rows: ReactNode[] = [];
  for (let i = first; i <= last; i++) {
    const e = events[i]!;
    const isOpen = open.has(e.id);
    const lvl = levelOf(e.data);
    rows.push(
      <div
        key={e.id}
        role="row"
        className={`r-row${isOpen ? ' open' : ''}${i % 2 ? ' odd' : ''}`}
        data-tone={lvl?.tone}
        style={{ top: offsets[i] }}
        data-testid="result-row"
        data-id={e.id}
        data-index={i}
        ref={isOpen ? (el) => measure(e.id, el) : undefined}
      >
        <div className="r-line">
          <button
            type="button"
            role="cell"
            className="r-toggle"
            aria-expanded={isOpen}
            aria-label={isOpen ? 'Close the document' : 'Open the document'}
            onClick={() => toggle(e.id)}
          >
            {isOpen ? '▾' : '▸'}
          </button>
          <span role="cell" className="r-time">
            <span className="r-date">{utc(e.time).slice(0, 11)}</span>
            {utc(e.time).slice(11, 23)}
          </span>
          <span role="cell" className="r-level" data-testid="row-level" data-tone={lvl?.tone}>
            {lvl?.text}
          </span>
          {props.columns.length === 0
            ? (() => {
                const sm = summary(e.data);
                return (
                  <span role="cell" className="r-doc">
                    {sm.message && (
                      <span className="r-msg" data-testid="row-message">
                        {sm.message}
                      </span>
                    )}
                    <span className="r-rest">{sm.rest}</span>
                  </span>
                );
              })()
            : props.columns.map((c) => (
                <span role="cell" key={c} className="r-col" data-col={c}>
                  {cellText(fieldOf(e.data, c))}
                </span>
              ))}
        </div>
        {isOpen && (
          <div className="r-detail" data-testid="row-detail">
            <pre className="r-json">{JSON.stringify(e.data, null, 2)}</pre>
            {props.renderDetail?.(e)}
          </div>
        )}
      </div>,
    );
  }

  return (
    <div className="results" role="table" aria-label="Results" aria-rowcount={events.length}>
      <div className="r-head" role="row">
        <span className="r-toggle" aria-hidden="true" />
        <span role="columnheader" className="r-time">
          Time (UTC)
        </span>
        <span role="columnheader" className="r-level">
          Level
        </span>
        {props.columns.length === 0 ? (
          <span role="columnheader" className="r-doc">
            Message and fields
          </span>
        ) : (
          props.columns.map((c) => (
            <span role="columnheader" key={c} className="r-col" data-testid="column-header">
              {c}
              <button
                type="button"
                className="r-remove"
                aria-label={`Remove column ${c}`}
                onClick={() => props.onRemoveColumn(c)}
              >
                ×
              </button>
            </span>
          ))
        )}
      </div>
      <div
        className="r-scroll"
        ref={scroller}
        data-testid="results-scroll"
        onScroll={(ev) => {
          const el = ev.currentTarget;
          atBottom.current = el.scrollTop + el.clientHeight >= el.scrollHeight - ROW_HEIGHT;
          if (atBottom.current) setSeen(events.length);
          setScrollTop(el.scrollTop);
        }}
      >
        <div className="r-space" style={{ height: total }}>
          {rows}
        </div>
        {props.footer}
        {unseen > 0 && (
          <button
            type="button"
            className="new-rows"
            data-testid="new-rows"
            onClick={() => scroller.current?.scrollTo({ top: scroller.current.scrollHeight })}
          >
            {unseen.toLocaleString('en-US')} new ↓
          </button>
        )}
      </div>
    </div>
  );
}
