// Polls an API path every 2 seconds (spec: 1.5 to 3 s) while the component is mounted and the tab is visible.
import { useCallback, useEffect, useRef, useState } from 'react';
import { apiWithHeaders, ApiError, OfflineError } from './api';
import { everyWhileVisible } from './visibility';

export const POLL_MS = 2000;

export interface Polled<T> {
  data: T | null;
  /** Why the last poll failed (kept until a poll succeeds); null when it worked. */
  error: string | null;
  /** The last failure was the pooler not answering (the shell shows the offline banner). */
  offline: boolean;
  /** No answer yet, neither data nor error. */
  loading: boolean;
  headers: Headers | null;
  refresh: () => void;
}

/** `path` null polls nothing (a page that waits for something else first). */
export function usePolling<T>(path: string | null, opts: { paused?: boolean; intervalMs?: number } = {}): Polled<T> {
  const [state, setState] = useState<{
    data: T | null;
    error: string | null;
    offline: boolean;
    headers: Headers | null;
    path: string | null;
  }>({ data: null, error: null, offline: false, headers: null, path: null });
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  const inFlight = useRef(false);
  useEffect(() => {
    if (path === null || opts.paused) return undefined;
    let alive = true;
    const load = () => {
      if (inFlight.current) return;
      inFlight.current = true;
      apiWithHeaders<T>(path)
        .then(
          (r) => {
            if (alive) setState({ data: r.data, error: null, offline: false, headers: r.headers, path });
          },
          (e: unknown) => {
            if (!alive) return;
            const error = e instanceof ApiError ? `${e.status}: ${e.message}` : (e as Error).message;
            setState((s) => ({ ...s, error, offline: e instanceof OfflineError, path }));
          },
        )
        .finally(() => {
          inFlight.current = false;
        });
    };
    const stop = everyWhileVisible(load, opts.intervalMs ?? POLL_MS);
    return () => {
      alive = false;
      inFlight.current = false;
      stop();
    };
  }, [path, tick, opts.paused, opts.intervalMs]);
  // Data of an earlier path stays on screen while the new one loads (filters change without a blank table).
  return {
    data: state.data,
    error: state.error,
    offline: state.offline,
    loading: state.data === null && state.error === null,
    headers: state.headers,
    refresh,
  };
}
