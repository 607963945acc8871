// Client-side routes on the History API: useLocation() re-renders on navigation; navigate() pushes, setQuery() replaces the query.
import { useEffect, useState, type MouseEvent } from 'react';

const EVENT = 'pooler:navigate';

export function navigate(path: string): void {
  if (path === window.location.pathname + window.location.search) return;
  window.history.pushState(null, '', path);
  window.dispatchEvent(new Event(EVENT));
  window.scrollTo(0, 0);
}

/** Replaces the URL's query (filters, sort, page) without a new history entry; empty values are left out. */
export function setQuery(params: Record<string, string | number | null | undefined>): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  const url = window.location.pathname + (s ? `?${s}` : '');
  if (url === window.location.pathname + window.location.search) return;
  window.history.replaceState(null, '', url);
  window.dispatchEvent(new Event(EVENT));
}

export interface Location {
  path: string;
  search: string;
}

export function useLocation(): Location {
  const read = () => ({ path: window.location.pathname, search: window.location.search });
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = () =>
      setLoc((old) => {
        const now = read();
        return old.path === now.path && old.search === now.search ? old : now;
      });
    window.addEventListener('popstate', update);
    window.addEventListener(EVENT, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(EVENT, update);
    };
  }, []);
  return loc;
}

export function usePath(): string {
  return useLocation().path;
}

/** A link that navigates inside the console (Ctrl/Cmd/middle click still open a new tab). */
export function linkProps(href: string): { href: string; onClick: (e: MouseEvent) => void } {
  return {
    href,
    onClick: (e) => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(href);
    },
  };
}
