// fetch for the console: no cookies, the current credential, JSON, a timeout; 401 reopens sign-in, 403 raises the banner, a pooler that misses two polls the offline banner.
import { authorizationHeader } from './auth';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Listener = (status: 401 | 403) => void;
const listeners = new Set<Listener>();

export function onAuthProblem(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

/** A GET without an answer in this time is a missed poll (polls run every 2 s; a frozen pooler never answers). */
export const REQUEST_TIMEOUT_MS = 3000;
/** Admin actions may take longer (RELOAD reads the file, checks it, applies it). */
const ACTION_TIMEOUT_MS = 30_000;
/** Two failures sent this far apart are two missed polls, not one round of polls failing together. */
const SECOND_MISS_MS = 1000;

/** `since`: when the first unanswered request was sent; null when the pooler answers. */
type ConnectionListener = (since: number | null) => void;
const connectionListeners = new Set<ConnectionListener>();
/** Send time of the first request of the current run of failures (no answer, a network error, a 502/503/504 from a
 * proxy in front); null after an answer. */
let missingSince: number | null = null;
let notAnswering: number | null = null;
let lastAnswer: number | null = null;

/** When the last answer came (null before the first): the age of the figures on screen. */
export function lastAnswerAt(): number | null {
  return lastAnswer;
}

/** When the pooler stopped answering (its first missed request), once it missed two polls; else null. */
export function notAnsweringSince(): number | null {
  return notAnswering;
}

export function onConnectionChange(l: ConnectionListener): () => void {
  connectionListeners.add(l);
  return () => connectionListeners.delete(l);
}

function setNotAnswering(since: number | null): void {
  if (notAnswering === since) return;
  notAnswering = since;
  for (const l of connectionListeners) l(since);
}

function answered(): void {
  lastAnswer = Date.now();
  missingSince = null;
  setNotAnswering(null);
}

/** A request sent at `sentAt` got no answer: the second miss, a poll later than the first, raises the banner. */
function missed(sentAt: number): void {
  missingSince = missingSince === null ? sentAt : Math.min(missingSince, sentAt);
  if (sentAt - missingSince >= SECOND_MISS_MS) setNotAnswering(missingSince);
}

/** The pooler did not answer (connection refused, reset, or a gateway error). */
export class OfflineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OfflineError';
  }
}

export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; authorization?: string | null } = {},
): Promise<T> {
  return (await apiWithHeaders<T>(path, init)).data;
}

/** Like api(), also returning the response headers (X-Total-Count of /api/clients). */
export async function apiWithHeaders<T>(
  path: string,
  init: { method?: string; body?: unknown; authorization?: string | null } = {},
): Promise<{ data: T; headers: Headers }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const auth = init.authorization === undefined ? authorizationHeader() : init.authorization;
  if (auth) headers['authorization'] = auth;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const method = init.method ?? 'GET';
  const timeoutMs = method === 'GET' ? REQUEST_TIMEOUT_MS : ACTION_TIMEOUT_MS;
  const abort = new AbortController();
  const timer = window.setTimeout(() => abort.abort(), timeoutMs);
  const sentAt = Date.now();
  let res: Response;
  let text: string;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'omit',
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: abort.signal,
    });
    // The body is part of the answer: a pooler that freezes mid-body times out too.
    text = await res.text();
  } catch (err) {
    missed(sentAt);
    throw new OfflineError(
      abort.signal.aborted
        ? `the pooler is not answering (no answer within ${timeoutMs / 1000} s)`
        : `the pooler is not answering (${(err as Error).message})`,
    );
  } finally {
    window.clearTimeout(timer);
  }
  if (res.status === 502 || res.status === 503 || res.status === 504) {
    missed(sentAt);
    throw new OfflineError(`the pooler is not answering (HTTP ${res.status})`);
  }
  answered();
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
