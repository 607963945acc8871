// The aggregations panel: count, sum, min, max, avg, quantiles or unique of a field, by group, once or over time, as charts.
import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import { ApiError, call, type Field } from './api';
import { cssVar } from './theme';
import { bucketFor } from './time';
import type { AggForm } from './url-state';

const FUNCS = ['count', 'sum', 'avg', 'min', 'max', 'quantile', 'unique'] as const;
/** Groups drawn as lines over time (the largest by total). */
const MAX_SERIES = 6;
const SERIES_VARS = ['--series-1', '--series-2', '--series-3', '--series-4', '--series-5', '--series-6'];

interface Bucket {
  key: string;
  value: number;
  quantiles?: number[];
}
interface AggAnswer {
  total: number;
  aggregations: { buckets: Bucket[] }[];
}
interface TsAnswer {
  total: number;
  aggregations: {
    interval: string;
    series: { key: string; points: { ts: string; value: number; quantiles?: number[] }[] }[];
  }[];
}

export type AggResult =
  | { kind: 'buckets'; total: number; buckets: Bucket[]; quantiles: number[] }
  | {
      kind: 'series';
      total: number;
      interval: string;
      x: number[];
      lines: { label: string; values: (number | null)[] }[];
    };

const fmt = (v: number) =>
  Number.isInteger(v) ? v.toLocaleString('en-US') : (Math.round(v * 1000) / 1000).toLocaleString('en-US');

export function parseQuantiles(text: string): number[] | null {
  const qs = text.split(',').map((s) => Number(s.trim()));
  return qs.length && qs.every((q) => Number.isFinite(q) && q >= 0 && q <= 1) ? qs : null;
}

/** Runs the form's aggregation over the query and range. */
export async function runAgg(
  form: AggForm,
  query: string,
  from: string,
  to: string,
  signal: AbortSignal,
): Promise<AggResult> {
  const quantiles = form.func === 'quantile' ? parseQuantiles(form.quantiles) : [];
  if (!quantiles)
    throw new ApiError(
      400,
      'bad_request',
      'Quantiles are numbers from 0 to 1 separated by commas, such as 0.5, 0.95, 0.99.',
      {},
    );
  // A count of documents by group counts the group field's values (the log store counts values of `field`).
  const agg = {
    field: form.field || (form.func === 'count' ? form.group_by : ''),
    func: form.func,
    ...(form.group_by ? { group_by: form.group_by } : {}),
    ...(quantiles.length ? { quantiles } : {}),
  };
  if (!form.interval) {
    const r = await call<AggAnswer>('POST', '/aggregation', { query, from, to, aggregations: [agg] }, signal);
    const buckets = [...r.aggregations[0]!.buckets].sort((a, b) => b.value - a.value || (a.key < b.key ? -1 : 1));
    return { kind: 'buckets', total: r.total, buckets, quantiles };
  }
  const interval = form.interval === 'auto' ? bucketFor(Date.parse(to) - Date.parse(from)) : form.interval;
  const r = await call<TsAnswer>('POST', '/aggregation_ts', { query, from, to, interval, aggregations: [agg] }, signal);
  const series = r.aggregations[0]!.series;
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => Date.parse(p.ts) / 1000)))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const lines: { label: string; values: (number | null)[]; sum: number }[] = [];
  for (const s of series) {
    const names = quantiles.length
      ? quantiles.map((q) => `${s.key ? `${s.key} ` : ''}p${Math.round(q * 1000) / 10}`)
      : [s.key || form.func];
    names.forEach((label, qi) => {
      const values: (number | null)[] = new Array(xs.length).fill(null);
      let sum = 0;
      for (const p of s.points) {
        const v = quantiles.length ? (p.quantiles?.[qi] ?? null) : p.value;
        values[index.get(Date.parse(p.ts) / 1000)!] = v;
        sum += v ?? 0;
      }
      lines.push({ label, values, sum });
    });
  }
  lines.sort((a, b) => b.sum - a.sum || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  return {
    kind: 'series',
    total: r.total,
    interval,
    x: xs,
    lines: lines.slice(0, MAX_SERIES).map(({ label, values }) => ({ label, values })),
  };
}

function SeriesChart(props: { x: number[]; lines: { label: string; values: (number | null)[] }[]; scheme: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || props.x.length === 0) return undefined;
    const axis = {
      stroke: cssVar('--muted'),
      grid: { stroke: cssVar('--grid'), width: 1 },
      ticks: { stroke: cssVar('--grid'), width: 1 },
    };
    const u = new uPlot(
      {
        width: Math.max(200, el.clientWidth),
        height: 260,
        legend: { show: true, live: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        axes: [
          { ...axis, values: (_u, vals) => vals.map((v) => new Date(v * 1000).toISOString().slice(11, 16)) },
          { ...axis, size: 60, values: (_u, vals) => vals.map(fmt) },
        ],
        series: [
          {},
          ...props.lines.map((l, i) => ({
            label: l.label,
            stroke: cssVar(SERIES_VARS[i % SERIES_VARS.length]!),
            width: 2,
            spanGaps: true,
            points: { show: false },
          })),
        ],
      },
      [props.x, ...props.lines.map((l) => l.values)] as uPlot.AlignedData,
      el,
    );
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: 260 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
    };
  }, [props.x, props.lines, props.scheme]);
  return (
    <div
      ref={box}
      className="agg-plot"
      role="img"
      aria-label={`Over time: ${props.lines.map((l) => l.label).join(', ')}`}
    />
  );
}

function BucketBars(props: { buckets: Bucket[]; quantiles: number[]; func: string }) {
  const max = Math.max(
    ...props.buckets.map((b) => (props.quantiles.length ? Math.max(...(b.quantiles ?? [0])) : b.value)),
    1e-9,
  );
  return (
    <table className="agg-table" data-testid="agg-table">
      <thead>
        <tr>
          <th>Group</th>
          {props.quantiles.length ? (
            props.quantiles.map((q) => <th key={q}>p{Math.round(q * 1000) / 10}</th>)
          ) : (
            <th>{props.func}</th>
          )}
          <th className="agg-barcol" aria-hidden="true" />
        </tr>
      </thead>
      <tbody>
        {props.buckets.map((b) => {
          const v = props.quantiles.length ? Math.max(...(b.quantiles ?? [0])) : b.value;
          return (
            <tr
              key={b.key}
              data-testid="agg-row"
              data-key={b.key}
              data-value={b.value}
              data-quantiles={(b.quantiles ?? []).join(',')}
            >
              <td className="agg-key">{b.key || '(all)'}</td>
              {props.quantiles.length ? (
                props.quantiles.map((q, i) => (
                  <td key={q} className="num">
                    {fmt(b.quantiles?.[i] ?? 0)}
                  </td>
                ))
              ) : (
                <td className="num">{fmt(b.value)}</td>
              )}
              <td className="agg-barcol" aria-hidden="true">
                <span className="agg-bar" style={{ width: `${Math.max(0.5, (v / max) * 100)}%` }} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export interface AggsPanelProps {
  form: AggForm;
  onForm: (f: AggForm) => void;
  fields: Field[];
  query: string;
  from: string;
  to: string;
  scheme: string;
}

export function AggsPanel(props: AggsPanelProps) {
  const { form } = props;
  const [result, setResult] = useState<AggResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const ready = props.from !== '' && (form.field !== '' || (form.func === 'count' && form.group_by !== ''));
  const key = JSON.stringify([form, props.query, props.from, props.to]);

  useEffect(() => {
    if (!ready) {
      setResult(null);
      return undefined;
    }
    const ctl = new AbortController();
    setLoading(true);
    setError(null);
    runAgg(form, props.query, props.from, props.to, ctl.signal).then(
      (r) => {
        setResult(r);
        setLoading(false);
      },
      (err: Error) => {
        if (!ctl.signal.aborted) {
          setError(err.message);
          setResult(null);
          setLoading(false);
        }
      },
    );
    return () => ctl.abort();
    // key stands for the form, query and range.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, ready]);

  const set = (patch: Partial<AggForm>) => props.onForm({ ...form, ...patch });
  const names = props.fields.map((f) => f.name);
  return (
    <section className="aggs" aria-label="Aggregations" data-testid="aggs" data-loading={loading ? 'true' : 'false'}>
      <form className="agg-form" onSubmit={(e) => e.preventDefault()}>
        <label>
          Function
          <select data-testid="agg-func" value={form.func} onChange={(e) => set({ func: e.target.value })}>
            {FUNCS.map((f) => (
              <option key={f} value={f}>
                {f}
              </option>
            ))}
          </select>
        </label>
        <label>
          Field
          <select data-testid="agg-field" value={form.field} onChange={(e) => set({ field: e.target.value })}>
            <option value="">{form.func === 'count' ? '(documents)' : 'choose a field'}</option>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <label>
          Group by
          <select data-testid="agg-group" value={form.group_by} onChange={(e) => set({ group_by: e.target.value })}>
            <option value="">(none)</option>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        {form.func === 'quantile' && (
          <label>
            Quantiles
            <input
              data-testid="agg-quantiles"
              value={form.quantiles}
              onChange={(e) => set({ quantiles: e.target.value })}
              size={14}
            />
          </label>
        )}
        <label>
          Over time
          <select data-testid="agg-interval" value={form.interval} onChange={(e) => set({ interval: e.target.value })}>
            <option value="">no (one value per group)</option>
            <option value="auto">yes, automatic step</option>
            {['1m', '5m', '15m', '1h', '1d'].map((i) => (
              <option key={i} value={i}>
                every {i}
              </option>
            ))}
          </select>
        </label>
      </form>
      {!ready && <p className="fs-note">Choose a field (or, for count, a field to group by).</p>}
      {error && (
        <p className="banner bad" role="alert" data-testid="agg-error">
          {error}
        </p>
      )}
      {result && result.kind === 'buckets' && (
        <>
          <p className="fs-note">
            {form.func}
            {form.field ? ` of ${form.field}` : ''}
            {form.group_by ? ` by ${form.group_by}` : ''} over {result.total.toLocaleString('en-US')} matches
          </p>
          <BucketBars buckets={result.buckets} quantiles={result.quantiles} func={form.func} />
        </>
      )}
      {result && result.kind === 'series' && (
        <figure className="agg-chart" data-testid="agg-series" data-lines={result.lines.map((l) => l.label).join('|')}>
          <figcaption className="fs-note">
            {form.func}
            {form.field ? ` of ${form.field}` : ''}
            {form.group_by ? ` by ${form.group_by}` : ''} every {result.interval}
          </figcaption>
          <SeriesChart x={result.x} lines={result.lines} scheme={props.scheme} />
        </figure>
      )}
    </section>
  );
}
