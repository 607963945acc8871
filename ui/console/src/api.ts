// fetch for the console: no cookies, the current credential, JSON; 401 reopens sign-in, 403 raises the banner.
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

export async function api<T>(path: string, init: { method?: string; body?: unknown; authorization?: string | null } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const auth = init.authorization === undefined ? authorizationHeader() : init.authorization;
  if (auth) headers['authorization'] = auth;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers,
    credentials: 'omit',
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
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
  return data as T;
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
