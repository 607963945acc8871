// Matches over time as bars (uPlot); dragging across the bars narrows the time range to the selection.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { HistBucket } from './api';
import { cssVar } from './theme';
import { relMs } from './time';

export interface HistogramProps {
  buckets: HistBucket[];
  from: string;
  to: string;
  interval: string;
  scheme: string;
  onZoom: (from: string, to: string) => void;
}

/** Every bucket of the range (the log store leaves out empty ones), as uPlot's columns: start seconds, counts. */
export function fillBuckets(buckets: HistBucket[], from: string, to: string, interval: string): [number[], number[]] {
  const step = relMs(interval) ?? 60_000;
  const counts = new Map(buckets.map((b) => [Date.parse(b.ts), b.doc_count]));
  const start = Math.floor(Date.parse(from) / step) * step;
  const end = Date.parse(to);
  const xs: number[] = [];
  const ys: number[] = [];
  for (let t = start; t < end && xs.length < 2000; t += step) {
    xs.push(t / 1000);
    ys.push(counts.get(t) ?? 0);
  }
  return [xs, ys];
}

const label = (s: number, span: number) => {
  const iso = new Date(s * 1000).toISOString();
  return span > 2 * 86_400 ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, span < 600 ? 19 : 16);
};

export function Histogram(props: HistogramProps) {
  const box = useRef<HTMLDivElement>(null);
  const zoom = useRef(props.onZoom);
  zoom.current = props.onZoom;
  const [xs, ys] = fillBuckets(props.buckets, props.from, props.to, props.interval);
  const total = ys.reduce((a, b) => a + b, 0);

  useEffect(() => {
    const el = box.current;
    if (!el || xs.length === 0) return undefined;
    const span = (Date.parse(props.to) - Date.parse(props.from)) / 1000;
    const axis = {
      stroke: cssVar('--muted'),
      grid: { stroke: cssVar('--grid'), width: 1 },
      ticks: { stroke: cssVar('--grid'), width: 1 },
    };
    const bar = cssVar('--accent-2');
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 120,
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      select: { show: true, left: 0, top: 0, width: 0, height: 0 },
      scales: {
        x: { time: true, range: [Date.parse(props.from) / 1000, Date.parse(props.to) / 1000] },
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        { ...axis, values: (_u, vals) => vals.map((v) => label(v, span)) },
        {
          ...axis,
          size: 48,
          values: (_u, vals) => vals.map((v) => (v >= 1000 ? `${Math.round(v / 100) / 10}k` : String(Math.round(v)))),
        },
      ],
      series: [
        {},
        {
          label: 'matches',
          fill: bar,
          stroke: bar,
          paths: uPlot.paths.bars!({ size: [0.85, 40], align: 1 }),
          points: { show: false },
        },
      ],
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width < 4) return;
            const a = u.posToVal(u.select.left, 'x');
            const b = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            zoom.current(new Date(Math.round(a * 1000)).toISOString(), new Date(Math.round(b * 1000)).toISOString());
          },
        ],
      },
    };
    const u = new uPlot(opts, [xs, ys], el);
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: 120 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
    };
    // The plot is rebuilt for new data: a search gives a new bucket list.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.buckets, props.from, props.to, props.interval, props.scheme]);

  return (
    <figure className="histogram" data-testid="histogram" data-total={total} data-bars={xs.length}>
      <figcaption className="sr-only">
        Matches per {props.interval}, {total} in all; drag across the bars to zoom in.
      </figcaption>
      <div ref={box} className="hist-plot" role="img" aria-label={`Matches per ${props.interval}: ${total}`} />
    </figure>
  );
}
