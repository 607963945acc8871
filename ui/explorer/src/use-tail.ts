// Live tail: GET /api/v1/tail as Server-Sent Events; new matching documents are appended (oldest first), at most MAX_TAIL kept.
import { useEffect, useState } from 'react';
import type { UiEvent } from './api';

/** Rows kept in the tail view; older ones are dropped in blocks. */
export const MAX_TAIL = 10_000;

export interface TailState {
  events: UiEvent[];
  status: 'connecting' | 'open' | 'error';
  error: string | null;
  dropped: number;
}

export function useTail(query: string, enabled: boolean): TailState {
  const [state, setState] = useState<TailState>({ events: [], status: 'connecting', error: null, dropped: 0 });
  useEffect(() => {
    if (!enabled) return undefined;
    setState({ events: [], status: 'connecting', error: null, dropped: 0 });
    // From the moment live was turned on, not from whenever the stream reaches the server (a slow connect would
    // otherwise miss what arrived meanwhile); a reconnect asks from the same moment, and what it sends again is
    // recognised by id.
    const since = new Date().toISOString();
    const src = new EventSource(`/api/v1/tail?query=${encodeURIComponent(query)}&since=${encodeURIComponent(since)}`);
    const seen = new Set<string>();
    let pending: UiEvent[] = [];
    let frame = 0;
    // Events arriving together are appended in one render.
    const flush = () => {
      frame = 0;
      const batch = pending;
      pending = [];
      setState((s) => {
        let events = s.events.concat(batch);
        let dropped = s.dropped;
        if (events.length > MAX_TAIL) {
          dropped += events.length - MAX_TAIL;
          for (const e of events.slice(0, events.length - MAX_TAIL)) seen.delete(e.id);
          events = events.slice(events.length - MAX_TAIL);
        }
        return { ...s, events, dropped, status: 'open', error: null };
      });
    };
    src.addEventListener('open', () => setState((s) => ({ ...s, status: 'open', error: null })));
    src.addEventListener('event', (m) => {
      const e = JSON.parse((m as MessageEvent<string>).data) as UiEvent;
      if (seen.has(e.id)) return;
      seen.add(e.id);
      pending.push(e);
      if (!frame) frame = requestAnimationFrame(flush);
    });
    src.addEventListener('error', (m) => {
      const data = (m as MessageEvent<string>).data;
      let message = 'the live tail lost its connection; reconnecting';
      if (data) {
        try {
          message = (JSON.parse(data) as { error: { message: string } }).error.message;
        } catch (err) {
          message = `the live tail failed (${(err as Error).message})`;
        }
      }
      setState((s) => ({ ...s, status: 'error', error: message }));
    });
    return () => {
      if (frame) cancelAnimationFrame(frame);
      src.close();
    };
  }, [query, enabled]);
  return state;
}
