// The search API's operations, once for both faces (HTTP JSON and gRPC): validate a request body, run it on the
// backend (local store or cluster), and hand back results the face renders.
import { type AggResult, type AggSpec, finalizeAgg } from '../aggregate/aggregate.js';
import type { FetchAnswer, LogBackend, PartialInfo, QueryAnswer, SearchTask } from '../backend.js';
import { idTime } from '../doc-time.js';
import { ErrorCode, LogstoreError } from '../errors.js';
import type { MappingSpec } from '../mapping.js';
import type { ShardHit } from '../search/execute.js';
import { isoTime } from '../search/hit-json.js';
import { type SearchSpec, parseAggs, parseInterval, parseQuerySpec, parseSearchSpec } from './search-request.js';

/** What an operation needs: the backend, the mapping and the search limit. */
export interface ApiEnv {
  store: LogBackend;
  mapping: MappingSpec;
  config: { limits: { search_docs: number }; search?: { timeout: number } };
}

/** Extra time a shard thread may stay busy past search.timeout before /status and /health call it stuck (a search
 * stops at its deadline only at its next check). */
export const STUCK_GRACE_MS = 5000;

export interface SearchOutcome {
  spec: SearchSpec;
  aggs: AggSpec[];
  /** Histogram bucket width in ms; 0: none. */
  hist: number;
  r: QueryAnswer;
}

/** The body of /search (complex false) or /complex-search (aggs and hist too). */
export function parseSearchBody(
  env: ApiEnv,
  body: Record<string, unknown>,
  complex: boolean,
): Omit<SearchOutcome, 'r'> {
  const spec = parseSearchSpec(body, env.mapping, env.config.limits.search_docs);
  const aggs = complex ? parseAggs(body.aggs, env.mapping) : [];
  const histBody = body.hist as Record<string, unknown> | null | undefined;
  const hist = complex && histBody !== undefined ? parseInterval(histBody?.interval, 'hist.interval') : 0;
  return { spec, aggs, hist };
}

/**
 * The answer, unless the search stopped at search.timeout: the search API then answers 504 rather than counts
 * and hits of the part it read, which would pass for the whole (Elasticsearch's _search, whose clients read
 * timed_out, answers that part instead).
 */
export function whole(r: QueryAnswer): QueryAnswer {
  if (r.timedOut) {
    throw new LogstoreError(
      ErrorCode.SearchTimeout,
      'the search ran past search.timeout and was stopped; narrow the time range or the query (or raise search.timeout)',
      { timed_out: true },
    );
  }
  return r;
}

function searchTask(req: Omit<SearchOutcome, 'r'>): SearchTask {
  const { spec, aggs, hist } = req;
  return {
    text: spec.text,
    plan: spec.plan,
    from: spec.from,
    to: spec.to,
    limit: spec.offset + spec.size,
    order: spec.order,
    aggs,
    histInterval: hist,
    pipes: spec.pipes,
    withTotal: spec.withTotal,
  };
}

export async function runSearch(env: ApiEnv, req: Omit<SearchOutcome, 'r'>): Promise<SearchOutcome> {
  return { spec: req.spec, aggs: req.aggs, hist: req.hist, r: whole(await env.store.query(searchTask(req))) };
}

/** runSearch's outcome when the backend has the answer at hand (no await: no promise, no microtask), else null. */
export function runSearchSync(env: ApiEnv, req: Omit<SearchOutcome, 'r'>): SearchOutcome | null {
  const r = env.store.querySync?.(searchTask(req));
  return r ? { spec: req.spec, aggs: req.aggs, hist: req.hist, r: whole(r) } : null;
}

export async function runAggregate(
  env: ApiEnv,
  body: Record<string, unknown>,
): Promise<{ aggs: AggSpec[]; r: QueryAnswer }> {
  const spec = parseQuerySpec(body, env.mapping);
  const aggs = parseAggs(body.aggs ?? body.agg, env.mapping);
  if (aggs.length === 0)
    throw new LogstoreError(
      ErrorCode.BadRequest,
      'aggs must list at least one aggregation {field, func, group_by, quantiles, interval}',
    );
  const r = whole(
    await env.store.query({
      text: spec.text,
      plan: spec.plan,
      from: spec.from,
      to: spec.to,
      limit: 0,
      order: 'desc',
      aggs,
    }),
  );
  return { aggs, r };
}

export async function runHistogram(env: ApiEnv, body: Record<string, unknown>): Promise<QueryAnswer> {
  const spec = parseQuerySpec(body, env.mapping);
  const interval = parseInterval(
    body.interval ?? (body.hist as Record<string, unknown> | undefined)?.interval,
    'interval',
  );
  return whole(
    await env.store.query({
      text: spec.text,
      plan: spec.plan,
      from: spec.from,
      to: spec.to,
      limit: 0,
      order: 'desc',
      histInterval: interval,
    }),
  );
}

export async function runFetch(
  env: ApiEnv,
  body: Record<string, unknown>,
): Promise<FetchAnswer & { notFound: string[] }> {
  const ids = body.ids;
  if (!Array.isArray(ids) || !ids.every((x) => typeof x === 'string'))
    throw new LogstoreError(ErrorCode.BadRequest, 'ids must be a list of document ids');
  if (ids.length > env.config.limits.search_docs)
    throw new LogstoreError(
      ErrorCode.BadRequest,
      `at most limits.search_docs (${env.config.limits.search_docs}) ids per fetch`,
    );
  const fields = body.fields;
  if (fields !== undefined && (!Array.isArray(fields) || !fields.every((x) => typeof x === 'string')))
    throw new LogstoreError(ErrorCode.BadRequest, 'fields must be a list of field names');
  const pipes = fields ? [{ kind: 'fields' as const, except: false, names: fields as string[] }] : [];
  const valid = (ids as string[]).filter((id) => idTime(id) !== null);
  const answer = await env.store.fetch(valid, pipes);
  const found = new Set(answer.hits.map((h) => h.id));
  return { ...answer, notFound: (ids as string[]).filter((id) => !found.has(id)) };
}

/**
 * Every match of a query, newest first, page by page (a time cursor keeps memory bounded); `onPage` may wait
 * (back-pressure). Ends after `size` documents when the body gives one.
 */
export async function runExport(
  env: ApiEnv,
  body: Record<string, unknown>,
  onPage: (hits: ShardHit[]) => Promise<void> | void,
): Promise<{ skippedFractions: string[] }> {
  const spec = parseQuerySpec(body, env.mapping);
  const max = body.size === undefined ? Infinity : Number(body.size);
  if (!(max >= 0)) throw new LogstoreError(ErrorCode.BadRequest, 'size must be a number >= 0');
  const page = 5000;
  let to = spec.to;
  let sent = 0;
  let boundary = new Set<string>();
  // Damaged fractions are left out (and quarantined) by the page that finds them; the export goes on without them.
  const skipped = new Set<string>();
  while (sent < max) {
    const limit = page + boundary.size;
    const r = whole(
      await env.store.query({
        text: spec.text,
        plan: spec.plan,
        from: spec.from,
        to,
        limit,
        order: 'desc',
        pipes: spec.pipes,
        withTotal: false,
      }),
    );
    if (r.partial?.skippedFractions) for (const f of r.partial.skippedFractions) skipped.add(f);
    else if (r.partial) throw new LogstoreError(ErrorCode.Upstream, `export stopped: ${r.partial.message}`);
    const hits = r.hits.slice(0, r.hits.length);
    const fresh = hits.filter((h) => !boundary.has(h.id));
    if (fresh.length === 0) break;
    const out = fresh.slice(0, Math.min(fresh.length, max - sent));
    sent += out.length;
    await onPage(out);
    const last = fresh[fresh.length - 1]!.time;
    const next = new Set<string>(to === last ? boundary : []);
    for (const h of hits) if (h.time === last) next.add(h.id);
    boundary = next;
    to = last;
    if (r.hits.length < limit) break;
  }
  return { skippedFractions: [...skipped] };
}

export function aggResults(specs: AggSpec[], r: QueryAnswer): AggResult[] {
  return specs.map((s, i) => finalizeAgg(s, r.aggs[i]!));
}

export function histBuckets(r: QueryAnswer): { ts: string; doc_count: number }[] {
  return [...r.hist].sort((a, b) => a[0] - b[0]).map(([ts, c]) => ({ ts: new Date(ts).toISOString(), doc_count: c }));
}

/** The seq-db error object of an answer that some shards could not contribute to. */
export function partialError(p: PartialInfo): { code: 'PARTIAL_RESPONSE'; message: string } {
  return { code: 'PARTIAL_RESPONSE', message: p.message };
}

export async function mappingOf(env: ApiEnv): Promise<{ auto: boolean; mapping: Record<string, string[]> }> {
  const mapping: Record<string, string[]> = {};
  if (env.mapping.auto) {
    for (const s of (await env.store.status()).shards) for (const f of s.fields) mapping[f] = ['keyword'];
  }
  for (const [f, types] of Object.entries(env.mapping.fields)) mapping[f] = [...types];
  return {
    auto: env.mapping.auto,
    mapping: Object.fromEntries(Object.entries(mapping).sort(([a], [b]) => (a < b ? -1 : 1))),
  };
}

export async function statusOf(env: ApiEnv, inflightBulks: number) {
  const st = await env.store.status();
  const shards = st.shards;
  const all = shards.flatMap((s) => s.fractions);
  const withDocs = all.filter((f) => f.docs > 0);
  // Lost or set-aside data (a write-ahead tail dropped, a fraction quarantined) keeps the status degraded until
  // a restart finds nothing to report (quarantine/ emptied by the operator).
  const problems = shards.flatMap((s) => (s.problems ?? []).map((p) => ({ shard: s.shard, ...p })));
  // A shard thread busy past search.timeout (and a grace) is stuck: its figures here are from before.
  const stuckAfter = (env.config.search?.timeout ?? 0) + STUCK_GRACE_MS;
  const stuck = shards.filter((s) => s.stale && (s.busy_ms ?? 0) > stuckAfter);
  const degraded = [
    ...stuck.map((s) => `shard ${s.shard} thread busy for ${s.busy_ms} ms, past search.timeout`),
    ...st.stores.filter((s) => !s.ok).map((s) => `store ${s.addr} is down: ${s.error}`),
    ...st.stores
      .filter((s) => s.ok && (s.behind ?? 0) > 0)
      .map((s) => `store ${s.addr} is behind: ${s.behind} batches it missed are being sent to it`),
    ...problems.map((p) => `shard ${p.shard}: ${p.kind} ${p.name}: ${p.detail}`),
  ];
  return {
    status: degraded.length ? 'degraded' : 'ok',
    mode: env.store.mode,
    shards: env.store.shardCount,
    ...(degraded.length ? { degraded } : {}),
    ...(problems.length ? { storage_problems: problems } : {}),
    docs: all.reduce((s, f) => s + f.docs, 0),
    raw_bytes: all.reduce((s, f) => s + f.raw_bytes, 0),
    disk_bytes: all.reduce((s, f) => s + f.disk_bytes, 0),
    fractions: {
      active: all.filter((f) => f.state === 'active').length,
      sealed: all.filter((f) => f.state === 'sealed').length,
    },
    oldest_time: withDocs.length ? new Date(Math.min(...withDocs.map((f) => f.min_time))).toISOString() : null,
    newest_time: withDocs.length ? new Date(Math.max(...withDocs.map((f) => f.max_time))).toISOString() : null,
    inflight_bulks: inflightBulks,
    per_shard: shards.map((s) => ({
      shard: s.shard,
      fractions: s.fractions,
      open_searches: s.open_searches ?? 0,
      ...(s.stale ? { stale: true, busy_ms: s.busy_ms ?? 0 } : {}),
    })),
    ...(env.store.mode === 'proxy' ? { stores: st.stores } : {}),
  };
}

/** The stored document inside a hit's JSON ({"id":"<24>","data":<doc>,"time":"<iso>"}), without parsing it. */
export function hitData(h: { json: string; time: number }): string {
  return h.json.slice(40, h.json.length - 11 - isoTime(h.time).length);
}
