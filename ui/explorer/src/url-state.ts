// The whole view in the URL (query, range, columns, tab, aggregation): a link reproduces what its sender saw.
import type { Range } from './time';

export interface AggForm {
  func: string;
  field: string;
  group_by: string;
  quantiles: string;
  interval: string;
}

export interface ViewState {
  q: string;
  range: Range;
  cols: string[];
  tab: 'events' | 'aggs' | 'patterns';
  agg: AggForm;
  /** Live tail instead of the search's results. */
  live: boolean;
}

export const DEFAULT_AGG: AggForm = {
  func: 'count',
  field: '',
  group_by: '',
  quantiles: '0.5,0.95,0.99',
  interval: '',
};

export function readUrl(search = window.location.search): ViewState {
  const p = new URLSearchParams(search);
  const from = p.get('from');
  const to = p.get('to');
  const range: Range = from && to ? { rel: null, from, to } : { rel: p.get('range') || '15m', from: '', to: '' };
  return {
    q: p.get('q') ?? '',
    range,
    cols: (p.get('cols') ?? '').split(',').filter(Boolean),
    tab: p.get('tab') === 'aggs' ? 'aggs' : p.get('tab') === 'patterns' ? 'patterns' : 'events',
    agg: {
      func: p.get('af') ?? DEFAULT_AGG.func,
      field: p.get('afield') ?? '',
      group_by: p.get('agroup') ?? '',
      quantiles: p.get('aq') ?? DEFAULT_AGG.quantiles,
      interval: p.get('aint') ?? '',
    },
    live: p.get('live') === '1',
  };
}

export function toSearch(s: ViewState): string {
  const p = new URLSearchParams();
  if (s.q) p.set('q', s.q);
  if (s.range.rel) p.set('range', s.range.rel);
  else {
    p.set('from', s.range.from);
    p.set('to', s.range.to);
  }
  if (s.cols.length) p.set('cols', s.cols.join(','));
  if (s.tab === 'patterns') p.set('tab', 'patterns');
  if (s.tab === 'aggs') {
    p.set('tab', 'aggs');
    p.set('af', s.agg.func);
    if (s.agg.field) p.set('afield', s.agg.field);
    if (s.agg.group_by) p.set('agroup', s.agg.group_by);
    if (s.agg.func === 'quantile') p.set('aq', s.agg.quantiles);
    if (s.agg.interval) p.set('aint', s.agg.interval);
  }
  if (s.live) p.set('live', '1');
  return `?${p.toString()}`;
}

/** Records the view as a history entry (back returns to the previous view) unless it is the same. */
export function writeUrl(s: ViewState, replace = false): void {
  const next = toSearch(s);
  if (next === window.location.search) return;
  if (replace) window.history.replaceState(null, '', next);
  else window.history.pushState(null, '', next);
}
