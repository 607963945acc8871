// The log-store UI backend's YAML configuration (`tidepool logstore-ui --config ui.yaml`): schema, defaults, load().
import { parseAddr } from './logstore.js';
import { type InferShape, type Problem, t, validate, formatProblem, loadConfigFile } from './schema.js';
import { readYamlMapping } from './yaml-mapping.js';

export const logstoreUiShape = {
  server: t.section({
    http_addr: t.string(':5555', "HTTP listen address: the /api/v1 API and the explorer's static bundle."),
    grpc_addr: t.string(
      ':5556',
      'gRPC listen address: the same API as /api/v1 (proto/logstore/ui.proto, service tidepool.logstore.ui.v1.LogstoreUi).',
    ),
    debug_addr: t.string(':5557', 'Debug listen address: /metrics (Prometheus, tidepool_logstore_ui_*) and /health.'),
  }),
  clients: t.section({
    logstore_addrs: t.stringList(
      ['127.0.0.1:9004'],
      'gRPC addresses of log-store proxies (or single-mode stores): each request starts on the next address (round-robin); an address that fails is skipped for the next one.',
    ),
    logstore_timeout: t.duration(
      10_000,
      'Budget of one request to the log store, retries and backoff included; past it the answer is a 504 logstore_timeout. An export is timed per wait for the log store (it may last longer as a whole).',
    ),
    logstore_avg_doc_size: t.size(
      1024,
      'Assumed average document size: sizes export write buffers (64 documents per write).',
    ),
    request_retries: t.int(
      2,
      'Retries of an idempotent call (every read: all calls the UI backend makes) that found its log store unavailable, each on the next address after 50 ms, 100 ms, ... while logstore_timeout lasts. Refusals (bad query, 404) are not retried.',
      0,
      20,
    ),
    proxy_client_mode: t.oneOf(
      ['grpc'] as const,
      'grpc',
      'Client transport toward the log store; only "grpc" (anything else is a config error).',
    ),
    grpc_keepalive_params: t.section({
      time: t.duration(10_000, 'gRPC keepalive ping interval toward the log store.'),
      timeout: t.duration(5_000, 'A log store that does not answer a ping in this time is cut off and reconnected.'),
      permit_without_stream: t.bool(true, 'Send keepalive pings while no call is active.'),
    }),
  }),
  handlers: t.section({
    logstore_api: t.section({
      cli_max_search_limit: t.int(
        10_000,
        'Largest `limit` of a search from a command-line client or script (header `X-Tidepool-Client: cli`; gRPC: `cli: true`).',
        1,
        10_000_000,
      ),
      max_search_limit: t.int(
        1_000,
        'Largest `limit` of a search (and of `before`/`after` of a context request).',
        1,
        10_000_000,
      ),
      max_search_total_limit: t.int(
        100_000,
        'Largest `offset + limit` of a search: the deepest document a search may reach.',
        1,
        100_000_000,
      ),
      max_search_offset_limit: t.int(50_000, 'Largest `offset` of a search.', 0, 100_000_000),
      max_export_limit: t.int(100_000, 'Most documents in one export (`limit` absent: this many).', 1, 1_000_000_000),
      max_parallel_export_requests: t.int(2, 'Exports running at once; one more is answered 429.', 1, 10_000),
      max_aggregations_per_request: t.int(5, 'Aggregations in one request.', 1, 1_000),
    }),
  }),
  saved_queries: t.section({
    path: t.string('./logstore-ui.db', 'SQLite file (better-sqlite3) holding the saved queries of each user name.'),
  }),
  tail: t.section({
    poll_interval: t.duration(1_000, 'How often a live tail asks the log store for new documents.'),
    max_streams: t.int(64, 'Live tails open at once; one more is answered 429.', 1, 100_000),
  }),
  links: t.section({
    console_url: t.string(
      '',
      "Address of the pooler's web console (e.g. http://127.0.0.1:9127): an opened record with a pool links to that pool's page there. Empty: no links.",
    ),
  }),
  static: t.section({
    dir: t.string('', "Directory of the explorer's built bundle (empty: ui/dist/explorer of this package)."),
  }),
  log: t.section({
    level: t.oneOf(
      ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const,
      'info',
      'Process log level.',
    ),
    format: t.oneOf(['logfmt', 'json'] as const, 'logfmt', 'Process log lines: logfmt or JSON lines.'),
  }),
};

export type LogstoreUiConfig = InferShape<typeof logstoreUiShape>;
export type UiLimits = LogstoreUiConfig['handlers']['logstore_api'];

export class LogstoreUiConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: Problem[],
  ) {
    super(`${file}: ${problems.length} problem(s)\n${problems.map((p) => `  ${formatProblem(p)}`).join('\n')}`);
    this.name = 'LogstoreUiConfigError';
  }
}

/** Parses and validates YAML text; every problem names its key. */
export function parseLogstoreUiConfig(text: string): { config: LogstoreUiConfig; problems: Problem[] } {
  const read = readYamlMapping(text, 'server, clients, handlers');
  if ('problem' in read) return { config: validate(logstoreUiShape, {}).value, problems: [read.problem] };
  const raw = read.raw;
  const { value, problems } = validate(logstoreUiShape, raw);
  for (const key of ['http_addr', 'grpc_addr', 'debug_addr'] as const) {
    if (!parseAddr(value.server[key]))
      problems.push({
        path: `server.${key}`,
        expected: '"<host>:<port>" or ":<port>"',
        found: JSON.stringify(value.server[key]),
      });
  }
  if (value.clients.logstore_addrs.length === 0)
    problems.push({
      path: 'clients.logstore_addrs',
      expected: 'at least one log-store gRPC address',
      found: 'an empty list',
    });
  value.clients.logstore_addrs.forEach((a, i) => {
    if (!parseAddr(a) || parseAddr(a)!.host === '0.0.0.0')
      problems.push({
        path: `clients.logstore_addrs[${i}]`,
        expected: 'a gRPC address "<host>:<port>"',
        found: JSON.stringify(a),
      });
  });
  if (value.clients.logstore_timeout < 1)
    problems.push({ path: 'clients.logstore_timeout', expected: 'a duration of at least 1ms', found: '0' });
  if (value.clients.logstore_avg_doc_size < 1)
    problems.push({ path: 'clients.logstore_avg_doc_size', expected: 'at least 1 byte', found: '0' });
  const cu = value.links.console_url;
  if (cu !== '' && (!/^https?:\/\/[^/?#]+/i.test(cu) || !URL.canParse(cu))) {
    problems.push({
      path: 'links.console_url',
      expected: 'an http:// or https:// URL of the pooler\'s console ("http://127.0.0.1:9127"), or "" for no links',
      found: JSON.stringify(cu),
    });
  }
  return { config: value, problems };
}

/** Reads and validates a config file; throws LogstoreUiConfigError listing every problem. */
export function loadLogstoreUiConfig(file: string): LogstoreUiConfig {
  return loadConfigFile(file, parseLogstoreUiConfig, (f, problems) => new LogstoreUiConfigError(f, problems));
}
