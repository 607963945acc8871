// The small Elasticsearch calls shippers and scripts make: GET /_cat/health, PUT and HEAD /<index>, _refresh.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { esError } from './reply.js';
import type { HttpContext } from '../context.js';
import { ES_HEADERS, sendEsJson } from './reply.js';

const HEALTH_COLUMNS = [
  'epoch',
  'timestamp',
  'cluster',
  'status',
  'node.total',
  'node.data',
  'shards',
  'pri',
  'relo',
  'init',
  'unassign',
  'unassign.pri',
  'pending_tasks',
  'max_task_wait_time',
  'active_shards_percent',
] as const;

/**
 * GET /_cat/health (rsyslog polls it while resuming): one row, green while the process serves (its shards
 * are local threads, all allocated). Text as Elasticsearch prints it, `?v` adds the header, `?h=a,b`
 * picks columns, `?format=json` answers a list of objects.
 */
export function catHealth(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  params: URLSearchParams,
): number {
  const now = new Date();
  const shards = String(ctx.store.shardCount);
  const row: Record<(typeof HEALTH_COLUMNS)[number], string> = {
    epoch: String(Math.floor(now.getTime() / 1000)),
    timestamp: now.toISOString().slice(11, 19),
    cluster: 'tidepool',
    status: 'green',
    'node.total': '1',
    'node.data': '1',
    shards,
    pri: shards,
    relo: '0',
    init: '0',
    unassign: '0',
    'unassign.pri': '0',
    pending_tasks: '0',
    max_task_wait_time: '-',
    active_shards_percent: '100.0%',
  };
  const h = params.get('h');
  const cols = h ? h.split(',').map((c) => c.trim()) : [...HEALTH_COLUMNS];
  const unknown = cols.filter((c) => !(HEALTH_COLUMNS as readonly string[]).includes(c));
  if (unknown.length) {
    esError(
      res,
      400,
      'illegal_argument_exception',
      `request [/_cat/health] contains unrecognized column names [${unknown.join(', ')}]; columns: ${HEALTH_COLUMNS.join(', ')}`,
    );
    return 400;
  }
  const picked = cols as (typeof HEALTH_COLUMNS)[number][];
  if (params.get('format') === 'json') {
    sendEsJson(req, res, 200, [Object.fromEntries(picked.map((c) => [c, row[c]]))]);
    return 200;
  }
  const lines = [picked.map((c) => row[c])];
  if (params.has('v')) lines.unshift([...picked]);
  const widths = picked.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  const text =
    lines
      .map((l) =>
        l
          .map((v, i) => v.padEnd(widths[i]!))
          .join(' ')
          .trimEnd(),
      )
      .join('\n') + '\n';
  res.writeHead(200, {
    'content-type': 'text/plain; charset=UTF-8',
    'content-length': Buffer.byteLength(text),
    ...ES_HEADERS,
  });
  res.end(text);
  return 200;
}

/**
 * GET /_cluster/health[/<index>] (Elasticsearch clients and shippers check it before writing): the health object,
 * green on the same grounds as _cat/health. `?level`, `?wait_for_status` and `?timeout` are accepted; waiting is
 * never needed (it is green or the process does not answer).
 */
export function clusterHealth(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): number {
  req.resume();
  const shards = ctx.store.shardCount;
  sendEsJson(req, res, 200, {
    cluster_name: 'tidepool',
    status: 'green',
    timed_out: false,
    number_of_nodes: 1,
    number_of_data_nodes: 1,
    active_primary_shards: shards,
    active_shards: shards,
    relocating_shards: 0,
    initializing_shards: 0,
    unassigned_shards: 0,
    unassigned_primary_shards: 0,
    delayed_unassigned_shards: 0,
    number_of_pending_tasks: 0,
    number_of_in_flight_fetch: 0,
    task_max_waiting_in_queue_millis: 0,
    active_shards_percent_as_number: 100.0,
  });
  return 200;
}

/** _refresh: documents are searchable once acknowledged, so there is nothing to do; acknowledged. */
export function refresh(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): number {
  const n = ctx.store.shardCount;
  sendEsJson(req, res, 200, { _shards: { total: n, successful: n, failed: 0 } });
  return 200;
}

/** Elasticsearch's index-name rules, so a name it would refuse is refused here too. */
export function indexNameProblem(name: string): string | null {
  if (name === '' || name === '.' || name === '..') return 'must not be empty, "." or ".."';
  if (name !== name.toLowerCase()) return 'must be lowercase';
  if (/[\\/*?"<>| ,#:]/.test(name)) return 'must not contain \\, /, *, ?, ", <, >, |, space, comma, # or :';
  if (/^[-_+]/.test(name)) return 'must not start with "_", "-" or "+"';
  if (Buffer.byteLength(name) > 255) return 'is longer than 255 bytes';
  return null;
}

/**
 * PUT /<index> (settings and mappings in the body are read and ignored: fields are indexed by the store's
 * mapping) and HEAD /<index>. The store is one log space: index names label items but are not kept apart,
 * so every valid name exists and creating one is acknowledged.
 */
export function putIndex(req: IncomingMessage, res: ServerResponse, index: string): number {
  req.resume();
  const problem = indexNameProblem(index);
  if (problem) {
    esError(res, 400, 'invalid_index_name_exception', `Invalid index name [${index}], ${problem}`);
    return 400;
  }
  sendEsJson(req, res, 200, { acknowledged: true, shards_acknowledged: true, index });
  return 200;
}

export function headIndex(req: IncomingMessage, res: ServerResponse, index: string): number {
  req.resume();
  const status = indexNameProblem(index) ? 404 : 200;
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...ES_HEADERS });
  res.end();
  return status;
}
