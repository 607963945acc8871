// A time-series chart (uPlot, canvas): one line per series, theme colours, an accessible text summary, an empty state.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { Help } from './help';
import { useColorScheme } from '../theme';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  /** CSS variable holding the line colour, e.g. `--series-1`. */
  color: string;
}

export interface ChartProps {
  title: string;
  /** Key into the help texts. */
  help?: string;
  /** Unix seconds, one per value. */
  x: number[];
  series: ChartSeries[];
  /** Formats a value for the axis and the summary. */
  format?: (v: number) => string;
  height?: number;
  testId?: string;
  /** Why there is nothing to draw (shown instead of an empty grid). */
  emptyText?: string;
}

const cssVar = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
const clock = (s: number) => new Date(s * 1000).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const plain = (v: number) => (Math.abs(v) >= 100 ? Math.round(v).toString() : (Math.round(v * 100) / 100).toString());

function stats(values: (number | null)[]): { last: number | null; max: number | null } {
  let last: number | null = null;
  let max: number | null = null;
  for (const v of values) {
    if (v === null) continue;
    last = v;
    max = max === null ? v : Math.max(max, v);
  }
  return { last, max };
}

export function Chart(props: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const scheme = useColorScheme();
  const format = props.format ?? plain;
  const hasData = props.x.length > 1 && props.series.some((s) => s.values.some((v) => v !== null));
  const shape = props.series.map((s) => s.label).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el || !hasData) return undefined;
    const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid'), width: 1 }, ticks: { stroke: cssVar('--grid'), width: 1 } };
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: props.height ?? 160,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [{ ...axis, values: (_u, vals) => vals.map((v) => clock(v)) }, { ...axis, size: 56, values: (_u, vals) => vals.map((v) => format(v)) }],
      series: [{}, ...props.series.map((s) => ({ label: s.label, stroke: cssVar(s.color), width: 2, points: { show: false }, value: (_u: uPlot, v: number | null) => (v === null ? '–' : format(v)) }))],
    };
    const u = new uPlot(opts, [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData, el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: props.height ?? 160 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // Rebuilt when the series set, the theme or data presence changes; values flow through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, scheme, hasData, props.height]);

  useEffect(() => {
    plot.current?.setData([props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData);
  });

  const summary = props.series
    .map((s) => {
      const st = stats(s.values);
      return `${s.label} ${st.last === null ? 'no data' : `now ${format(st.last)}, max ${format(st.max!)}`}`;
    })
    .join('; ');
  return (
    <figure className="chart" data-testid={props.testId} data-summary={summary}>
      <figcaption>
        {props.title}
        {props.help && <Help id={props.help} />}
      </figcaption>
      {hasData ? (
        <div ref={box} className="chart-plot" role="img" aria-label={`${props.title}, last 15 minutes: ${summary}`} />
      ) : (
        <div className="chart-empty" role="note">{props.emptyText ?? 'Collecting data: the chart fills as the console polls.'}</div>
      )}
    </figure>
  );
}
