// The UI backend's /api/v1 from the browser: JSON in and out, errors as ApiError with the server's code and details.
export interface UiEvent {
  id: string;
  data: Record<string, unknown> | string;
  time: string;
}
export interface Field {
  name: string;
  type: string;
  types: string[];
}
export interface Bucket {
  key: string;
  value: number;
  not_exists: number;
  quantiles?: number[];
}
export interface AggResult {
  buckets: Bucket[];
  not_exists: number;
}
export interface HistBucket {
  ts: string;
  doc_count: number;
}
export interface SearchAnswer {
  total: number;
  events: UiEvent[];
  histogram: { buckets: HistBucket[] } | null;
  aggregations: AggResult[];
  partial_response: boolean;
}
export interface AggQuery {
  field: string;
  func: string;
  group_by?: string;
  quantiles?: number[];
  interval?: string;
}
export interface Series {
  key: string;
  points: { ts: string; value: number; quantiles?: number[] }[];
}
export interface SavedQuery {
  id: number;
  name: string;
  query: string;
  view: Record<string, unknown>;
}
export interface Limits {
  max_search_limit: number;
  max_export_limit: number;
  max_aggregations_per_request: number;
  [k: string]: number;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
  }
}

const USER_KEY = 'tidepool.explorer.user';
export const userName = () => localStorage.getItem(USER_KEY) ?? '';
export const setUserName = (name: string) => localStorage.setItem(USER_KEY, name);

export async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (path.startsWith('/saved_queries') && userName()) headers['x-tidepool-user'] = encodeURIComponent(userName());
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch (err) {
    throw new ApiError(
      res.status,
      'bad_answer',
      `the server answered ${res.status} without JSON (${(err as Error).message})`,
      {},
    );
  }
  if (!res.ok) {
    const e = ((parsed as { error?: Record<string, unknown> })?.error ?? {}) as Record<string, unknown>;
    throw new ApiError(res.status, String(e.code ?? 'error'), String(e.message ?? `HTTP ${res.status}`), e);
  }
  return parsed as T;
}
