// fetch for the console: no cookies, the current credential, JSON; 401 reopens sign-in, 403 raises the banner, a lost pooler the offline banner.
import { authorizationHeader } from './auth';

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

type Listener = (status: 401 | 403) => void;
const listeners = new Set<Listener>();

export function onAuthProblem(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

type ConnectionListener = (online: boolean) => void;
const connectionListeners = new Set<ConnectionListener>();
let online = true;

/** Whether the last request reached the pooler (false after a network error or a 502/503/504 from a proxy in front). */
export function isOnline(): boolean {
  return online;
}

export function onConnectionChange(l: ConnectionListener): () => void {
  connectionListeners.add(l);
  return () => connectionListeners.delete(l);
}

function setOnline(value: boolean): void {
  if (online === value) return;
  online = value;
  for (const l of connectionListeners) l(value);
}

/** The pooler did not answer (connection refused, reset, or a gateway error). */
export class OfflineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OfflineError';
  }
}

export async function api<T>(path: string, init: { method?: string; body?: unknown; authorization?: string | null } = {}): Promise<T> {
  return (await apiWithHeaders<T>(path, init)).data;
}

/** Like api(), also returning the response headers (X-Total-Count of /api/clients). */
export async function apiWithHeaders<T>(path: string, init: { method?: string; body?: unknown; authorization?: string | null } = {}): Promise<{ data: T; headers: Headers }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const auth = init.authorization === undefined ? authorizationHeader() : init.authorization;
  if (auth) headers['authorization'] = auth;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method: init.method ?? 'GET',
      headers,
      credentials: 'omit',
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  } catch (err) {
    setOnline(false);
    throw new OfflineError(`the pooler is not answering (${(err as Error).message})`);
  }
  if (res.status === 502 || res.status === 503 || res.status === 504) {
    setOnline(false);
    throw new OfflineError(`the pooler is not answering (HTTP ${res.status})`);
  }
  setOnline(true);
  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: 'bad_response', message: text.slice(0, 200) };
    }
  }
  if (!res.ok) {
    const body = (data ?? {}) as { error?: string; message?: string };
    if (res.status === 401 || res.status === 403) for (const l of listeners) l(res.status);
    throw new ApiError(res.status, body.error ?? 'error', body.message ?? res.statusText);
  }
  return { data: data as T, headers: res.headers };
}

export interface AuthConfig {
  sso_enabled: boolean;
  sso_proxy_url?: string;
  sso_config_error?: string;
  sso_admin_groups_configured: boolean;
  role: 'admin' | 'sso' | 'anonymous' | 'none';
  username: string | null;
  ui_anonymous: boolean;
}

export type Row = Record<string, string | number | boolean | null>;
