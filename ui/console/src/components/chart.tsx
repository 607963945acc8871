// A time-series chart (uPlot, canvas): one line per series, theme colours, an accessible text summary, an empty state.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { Help } from './help';
import { useColorScheme } from '../theme';
import { numberTicks } from '../format';

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
  /** Formats a value for the legend and the summary. */
  format?: (v: number) => string;
  /** Labels of the value axis' ticks, all at once so they share a unit and decimals (format.ts numberTicks, microsTicks). */
  ticks?: (vals: readonly number[]) => string[];
  /** Axis label size in px (the wall's are read across a room). */
  fontSize?: number;
  height?: number;
  testId?: string;
  /** Why there is nothing to draw (shown instead of an empty grid). */
  emptyText?: string;
}

const cssVar = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
const clock = (s: number) =>
  new Date(s * 1000).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const plain = (v: number) => (Math.abs(v) >= 100 ? Math.round(v).toString() : (Math.round(v * 100) / 100).toString());
const FONT_FAMILY = "system-ui, -apple-system, 'Segoe UI', sans-serif";
const TICK = 6;
const GAP = 6;

let measurer: CanvasRenderingContext2D | null = null;
/** Width in CSS px of `text` drawn in `font`. */
function textWidth(text: string, font: string): number {
  measurer ??= document.createElement('canvas').getContext('2d');
  if (!measurer) return text.length * 10;
  measurer.font = font;
  return measurer.measureText(text).width;
}

/** Width of a value axis that holds its longest label whole (uPlot's fixed default cut "20.0 ms" to "0.0 ms"). */
export function axisWidth(labels: readonly (string | null)[], font: string): number {
  let widest = 0;
  for (const l of labels) if (l) widest = Math.max(widest, textWidth(l, font));
  return Math.ceil(widest + TICK + GAP + 4);
}

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
  const ticks = props.ticks ?? numberTicks;
  const fontPx = props.fontSize ?? 12;
  const fig = useRef<HTMLElement>(null);
  const hasData = props.x.length > 1 && props.series.some((s) => s.values.some((v) => v !== null));
  const shape = props.series.map((s) => s.label).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el || !hasData) return undefined;
    const font = `${fontPx}px ${FONT_FAMILY}`;
    const axis = {
      stroke: cssVar('--muted'),
      font,
      gap: GAP,
      grid: { stroke: cssVar('--grid'), width: 1 },
      ticks: { stroke: cssVar('--grid'), width: 1, size: TICK },
    };
    // The value axis is as wide as its longest label; the labels and width drawn are kept on the figure (tests read them).
    const ySize = (_u: uPlot, labels: string[] | null) => {
      const w = axisWidth(labels ?? [], font);
      fig.current?.setAttribute(
        'data-y-axis',
        JSON.stringify({ font, width: w, inner: TICK + GAP, labels: labels ?? [] }),
      );
      return w;
    };
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: props.height ?? 160,
      // The last time label (hh:mm:ss) is centred on its tick at the right edge: half of it needs room there.
      padding: [fontPx / 2, Math.ceil(textWidth('00:00:00', `${fontPx}px ${FONT_FAMILY}`) / 2) + 2, 0, 0],
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        {
          ...axis,
          size: fontPx * 2 + TICK + GAP,
          space: textWidth('00:00:00', font) + fontPx * 2,
          values: (_u, vals) => vals.map((v) => clock(v)),
        },
        { ...axis, size: ySize, space: fontPx * 3, values: (_u, vals) => ticks(vals) },
      ],
      series: [
        {},
        ...props.series.map((s) => ({
          label: s.label,
          stroke: cssVar(s.color),
          width: 2,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null ? '–' : format(v)),
        })),
      ],
    };
    const u = new uPlot(opts, [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData, el);
    plot.current = u;
    const ro = new ResizeObserver(() =>
      u.setSize({ width: Math.max(200, el.clientWidth), height: props.height ?? 160 }),
    );
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // Rebuilt when the series set, the theme or data presence changes; values flow through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, scheme, hasData, props.height, fontPx]);

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
    <figure ref={fig} className={fontPx > 12 ? 'chart big' : 'chart'} data-testid={props.testId} data-summary={summary}>
      <figcaption>
        {props.title}
        {props.help && <Help id={props.help} />}
      </figcaption>
      {hasData ? (
        <div ref={box} className="chart-plot" role="img" aria-label={`${props.title}, last 15 minutes: ${summary}`} />
      ) : (
        <div className="chart-empty" role="note">
          {props.emptyText ?? 'Collecting data: the chart fills as the console polls.'}
        </div>
      )}
    </figure>
  );
}
