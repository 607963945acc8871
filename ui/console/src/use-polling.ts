// Polls an API path every 2 seconds (spec: 1.5 to 3 s) while the component is mounted.
import { useCallback, useEffect, useState } from 'react';
import { api, ApiError } from './api';

export const POLL_MS = 2000;

export function usePolling<T>(path: string, deps: unknown[] = []): { data: T | null; error: string | null; refresh: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let alive = true;
    const load = () =>
      api<T>(path).then(
        (d) => { if (alive) { setData(d); setError(null); } },
        (e: unknown) => { if (alive) setError(e instanceof ApiError ? `${e.status}: ${e.message}` : String(e)); },
      );
    void load();
    const timer = window.setInterval(load, POLL_MS);
    return () => {
      alive = false;
      window.clearInterval(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [path, tick, ...deps]);
  return { data, error, refresh };
}
