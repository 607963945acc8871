// What a RELOAD changed, by key name (never by value: some values are secrets), and what of it needs a restart.
import type { PoolerConfig } from '../config/pooler.js';

function flat(prefix: string, v: unknown, out: Map<string, string>): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) flat(prefix ? `${prefix}.${k}` : k, x, out);
    return;
  }
  out.set(prefix, JSON.stringify(v));
}

/** Keys whose value differs, plus pools (`pools.<db>`) added, removed or changed; a changed user list shows once. */
export function configChanges(before: PoolerConfig, after: PoolerConfig): string[] {
  const out: string[] = [];
  for (const section of ['general', 'web', 'logs', 'native'] as const) {
    const a = new Map<string, string>();
    const b = new Map<string, string>();
    flat(section, before[section], a);
    flat(section, after[section], b);
    for (const k of new Set([...a.keys(), ...b.keys()])) if (a.get(k) !== b.get(k)) out.push(k);
  }
  for (const db of new Set([...Object.keys(before.pools), ...Object.keys(after.pools)])) {
    const a = before.pools[db];
    const b = after.pools[db];
    if (!a) out.push(`pools.${db} (added)`);
    else if (!b) out.push(`pools.${db} (removed)`);
    else {
      const fa = new Map<string, string>();
      const fb = new Map<string, string>();
      flat('', { ...a, users: undefined }, fa);
      flat('', { ...b, users: undefined }, fb);
      for (const k of new Set([...fa.keys(), ...fb.keys()])) if (fa.get(k) !== fb.get(k)) out.push(`pools.${db}.${k}`);
      if (JSON.stringify(a.users) !== JSON.stringify(b.users)) out.push(`pools.${db}.users`);
    }
  }
  return out;
}

/** Changed keys a RELOAD cannot apply to a running pooler (listeners, the prepared-statement caches' shape). */
export function restartNeeded(before: PoolerConfig, after: PoolerConfig): string[] {
  const out: string[] = [];
  const g = before.general;
  const n = after.general;
  if (n.host !== g.host || n.port !== g.port) out.push('general.host/port');
  if (
    after.web.host !== before.web.host ||
    after.web.port !== before.web.port ||
    after.web.enabled !== before.web.enabled
  )
    out.push('web.host/port/enabled');
  const w = before.web;
  const v = after.web;
  // The web listener's HTTP server takes its timeouts when it is built.
  if (
    v.headers_timeout !== w.headers_timeout ||
    v.request_timeout !== w.request_timeout ||
    v.keep_alive_timeout !== w.keep_alive_timeout ||
    v.idle_timeout !== w.idle_timeout
  )
    out.push('web.*_timeout');
  if (
    n.prepared_statements !== g.prepared_statements ||
    n.prepared_statements_cache_size !== g.prepared_statements_cache_size ||
    n.server_prepared_statements_cache_size !== g.server_prepared_statements_cache_size
  )
    out.push('general.prepared_statements*');
  for (const key of Object.keys(after.native) as (keyof PoolerConfig['native'])[]) {
    if (after.native[key] !== before.native[key]) out.push(`native.${key}`);
  }
  return out;
}
