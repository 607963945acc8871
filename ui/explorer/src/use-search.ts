// Runs the view's search (first page, total, histogram) and loads further pages on demand; a newer search cancels an older one.
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, call, type HistBucket, type SearchAnswer, type UiEvent } from './api';
import { bucketFor, resolve, type Range } from './time';

export interface SearchState {
  events: UiEvent[];
  total: number;
  buckets: HistBucket[];
  /** The instants the search ran over (a relative range resolved when it ran) and the histogram's bucket width. */
  from: string;
  to: string;
  interval: string;
  loading: boolean;
  loadingMore: boolean;
  error: ApiError | null;
  partial: boolean;
  tookMs: number;
}

const EMPTY: SearchState = {
  events: [],
  total: 0,
  buckets: [],
  from: '',
  to: '',
  interval: '1m',
  loading: true,
  loadingMore: false,
  error: null,
  partial: false,
  tookMs: 0,
};

export function useSearch(
  query: string,
  range: Range,
  pageSize: number,
  maxTotal: number,
  tick: number,
  enabled: boolean,
): SearchState & { loadMore: () => void } {
  const [state, setState] = useState<SearchState>(EMPTY);
  const current = useRef(state);
  current.current = state;
  const generation = useRef(0);
  const rangeKey = JSON.stringify(range);

  useEffect(() => {
    if (!enabled) return undefined;
    const gen = ++generation.current;
    const ctl = new AbortController();
    const { from, to } = resolve(range);
    const interval = bucketFor(Date.parse(to) - Date.parse(from));
    const started = performance.now();
    setState((s) => ({ ...s, loading: true, error: null }));
    call<SearchAnswer>(
      'POST',
      '/search',
      { query, from, to, limit: pageSize, with_total: true, histogram: { interval } },
      ctl.signal,
    ).then(
      (r) => {
        if (gen !== generation.current) return;
        setState({
          events: r.events,
          total: r.total,
          buckets: r.histogram?.buckets ?? [],
          from,
          to,
          interval,
          loading: false,
          loadingMore: false,
          error: null,
          partial: r.partial_response,
          tookMs: Math.round(performance.now() - started),
        });
      },
      (err: unknown) => {
        if (gen !== generation.current || ctl.signal.aborted) return;
        const e = err instanceof ApiError ? err : new ApiError(0, 'network', (err as Error).message, {});
        setState({ ...EMPTY, from, to, interval, loading: false, error: e });
      },
    );
    return () => ctl.abort();
    // rangeKey stands for range (a new object on every render).
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [query, rangeKey, pageSize, tick, enabled]);

  const loadMore = useCallback(() => {
    const s = current.current;
    if (s.loading || s.loadingMore || s.error || s.events.length >= s.total || s.events.length >= maxTotal) return;
    const gen = generation.current;
    const limit = Math.min(pageSize, maxTotal - s.events.length);
    setState({ ...s, loadingMore: true });
    call<SearchAnswer>('POST', '/search', {
      query,
      from: s.from,
      to: s.to,
      limit,
      offset: s.events.length,
      with_total: false,
    }).then(
      (r) => {
        if (gen !== generation.current) return;
        setState((p) => ({ ...p, events: [...p.events, ...r.events], loadingMore: false }));
      },
      (err: unknown) => {
        if (gen !== generation.current) return;
        const e = err instanceof ApiError ? err : new ApiError(0, 'network', (err as Error).message, {});
        setState((p) => ({ ...p, loadingMore: false, error: e }));
      },
    );
  }, [query, pageSize, maxTotal]);

  return { ...state, loadMore };
}
