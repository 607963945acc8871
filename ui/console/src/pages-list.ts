// The console's pages: path, title, and the role a page needs (Caches and Logs show SQL text and logs: Sso or Admin).
export interface PageInfo {
  path: string;
  title: string;
  /** Needs a signed-in Sso or Admin (not Anonymous). */
  personal?: boolean;
  description: string;
}

export const PAGES: readonly PageInfo[] = [
  { path: '/overview', title: 'Overview', description: 'totals and the last 15 minutes' },
  { path: '/pools', title: 'Pools', description: 'every user@database pool, saturation' },
  { path: '/clients', title: 'Clients', description: 'client connections, filters, rates' },
  { path: '/servers', title: 'Servers', description: 'PostgreSQL connections and pids' },
  { path: '/apps', title: 'Apps', description: 'traffic per application_name' },
  { path: '/caches', title: 'Caches', description: 'prepared statements, SQL-text cache', personal: true },
  { path: '/logs', title: 'Logs', description: "the pooler's own log records", personal: true },
  { path: '/config', title: 'Config', description: 'settings, databases, users, RELOAD' },
  { path: '/wall', title: 'Wall', description: 'big-screen view for an incident room' },
];

/** Pool detail address: /pools/<database>/<user>, each part URI-encoded (the pool's name in SHOW and /api/events). */
export function poolPath(database: string, user: string): string {
  return `/pools/${encodeURIComponent(database)}/${encodeURIComponent(user)}`;
}
