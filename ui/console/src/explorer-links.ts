// Links from the console to the pooler's records in the log explorer, when `[logs] explorer_url` names it (GET /api/links).
import { useEffect, useState } from 'react';
import { api } from './api';

let asked: Promise<string | null> | null = null;

/** The explorer's address, asked once per page load; null while unknown or when the pooler names none. */
export function useExplorerUrl(): string | null {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    asked ??= api<{ explorer_url: string | null }>('/api/links').then(
      (r) => r.explorer_url,
      () => {
        asked = null;
        return null;
      },
    );
    let live = true;
    void asked.then((u) => {
      if (live) setUrl(u);
    });
    return () => {
      live = false;
    };
  }, []);
  return url;
}

/** A seq-ql value that matches `v` exactly: a raw backtick string (a double-quoted one if it holds a backtick). */
function exact(v: string): string {
  return v.includes('`') ? `"${v.replace(/[\\"*]/g, (c) => `\\${c}`)}"` : `\`${v}\``;
}

/** The explorer over `query`: the last hour, or `around` a time (five minutes either side). */
export function explorerHref(base: string, query: string, around?: string): string {
  const t = around === undefined ? NaN : Date.parse(around);
  const range: Record<string, string> = Number.isNaN(t)
    ? { range: '1h' }
    : { from: new Date(t - 300_000).toISOString(), to: new Date(t + 300_000).toISOString() };
  return `${base.replace(/\/+$/, '')}/?${new URLSearchParams({ q: query, ...range }).toString()}`;
}

/** An admin event's records: its pool's ("database/user" in /api/events), or every record, around its time. */
export function eventLogsHref(base: string, e: { time: string; pool: string | null }): string {
  const [database, user] = e.pool?.split('/') ?? [];
  return explorerHref(base, database && user ? poolLogsQuery(database, user) : '*', e.time);
}

/** A pool's records: its own lines carry `pool: user@database`, login lines `user` and `database`. */
export function poolLogsQuery(database: string, user: string): string {
  return `pool:${exact(`${user}@${database}`)} or (user:${exact(user)} and database:${exact(database)})`;
}

export function clientLogsQuery(clientId: string | number): string {
  return `client_id:${clientId}`;
}
