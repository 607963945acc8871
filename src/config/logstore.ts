// The log store's YAML configuration: schema with defaults, load() -> frozen typed config.
import os from 'node:os';
import { type InferShape, type Problem, shownAs, t, validate, formatProblem, loadConfigFile } from './schema.js';
import { readYamlMapping } from './yaml-mapping.js';

export const LOGSTORE_MODES = ['single', 'proxy', 'store', 'ingestor'] as const;
export type LogstoreMode = (typeof LOGSTORE_MODES)[number];

export const logstoreShape = {
  server: t.section({
    http_addr: t.string(':9002', 'HTTP listen address (bulk ingest, search API), "<host>:<port>" or ":<port>".'),
    grpc_addr: t.string(
      ':9004',
      'gRPC listen address: the store API (store and single mode) and the public search API (proxy and single mode).',
    ),
    debug_addr: t.string(':9200', 'Debug listen address: /metrics (Prometheus) and /health.'),
  }),
  storage: t.section({
    data_dir: t.string(
      './data',
      'Directory holding the fractions, write-ahead files and catalogs, one shard-<n>/ directory per shard.',
    ),
    frac_size: t.size(
      128 * 1024 ** 2,
      'Size at which a shard\'s active fraction is sealed into immutable files: frac_size of raw documents, or half of it in memory (documents plus index; docs/logstore.md, "Memory"), whichever comes first.',
    ),
    total_size: t.size(
      0,
      'Disk bytes kept across all shards (each shard keeps its share); past it the oldest sealed fractions are dropped whole (0: no limit).',
    ),
    retention: t.duration(
      0,
      'Sealed fractions whose newest document is older than this are dropped, checked after each seal and every minute (0: keep forever).',
    ),
    shards: shownAs(
      t.int(
        os.availableParallelism(),
        'Indexing shards, each a single-thread piscina pool owning its fractions. A data_dir that already holds more shards opens them all, so lowering it hides no data.',
        1,
        256,
      ),
      'the CPU count',
    ),
  }),
  mapping: t.section({
    path: t.string(
      'auto',
      '"auto" indexes every field as keyword (for trying out); otherwise a YAML mapping file (docs/logstore.md, "Configuration (YAML)": the mapping file).',
    ),
  }),
  limits: t.section({
    max_doc_size: t.size(1024 ** 2, 'Largest document line in a bulk; a bigger one fails alone with a per-item 400.'),
    inflight_bulks: t.int(
      32,
      'Bulk (and single-document) writes processed at once; more wait in the bulk queue.',
      1,
      100_000,
    ),
    bulk_queue: t.int(
      1024,
      "Writes that may wait for one of inflight_bulks (first come, first served; a waiting body is not read, so waiting costs no memory); past it a bulk's items are answered 429 at once.",
      0,
      1_000_000,
    ),
    bulk_queue_wait: t.duration(
      10_000,
      "Longest wait in the bulk queue (keep it under every shipper's request timeout); then every item of the bulk is answered 429 es_rejected_execution_exception inside a 200 (a single-document write: 429).",
    ),
    bulk_memory: t.size(
      128 * 1024 ** 2,
      "Memory the bulks in flight may hold on the HTTP thread: batches handed to shards and not yet stored, and every item's state until its answer is written (about 16 bytes, plus its client _id; items answered 429 included). Past it documents are answered 429 es_rejected_execution_exception per item (not stored; shippers retry them); a bulk whose items' state alone would pass it by an eighth is refused whole (413).",
    ),
    search_docs: t.int(
      100_000,
      'Largest offset + size of one search, and largest id list of one fetch.',
      1,
      100_000_000,
    ),
  }),
  cluster: t.section({
    hot_stores: t.stringList(
      [],
      'Proxy mode: gRPC addresses ("<host>:<port>") of the stores, grouped into shards of hot_replicas consecutive hosts.',
    ),
    hot_replicas: t.int(
      1,
      'Proxy mode: stores per shard; every replica of a shard holds every document written to it. A number of hot_stores it does not divide is refused at start.',
      1,
      64,
    ),
    request_timeout: t.duration(
      10_000,
      'Proxy mode: deadline of one request to a store (a call, or a request on its gRPC Session); a store that does not answer in time counts as failed.',
    ),
    write_quorum: t.int(
      1,
      "Proxy mode: replicas of a shard that must store a batch for it to be acknowledged when the shard's other replicas do not answer and no other shard stored it whole (the missing replicas get it later, in order: cluster.catchup_memory). A batch that every replica of some shard stores is acknowledged as before; at hot_replicas, writes stop while a replica is down.",
      1,
      64,
    ),
    catchup_memory: t.size(
      256 * 1024 ** 2,
      'Proxy mode: batches kept in memory for replicas that missed them (write_quorum), all replicas together; past it a batch that not every replica stored fails as before (its items 500).',
    ),
    write_retries: t.int(
      3,
      'Proxy mode: tries of one batch (all replicas of a shard, its missing replicas again, then another shard) before its items fail.',
      1,
      20,
    ),
    breaker_failures: t.int(
      3,
      'Proxy mode: consecutive failed writes after which a shard is skipped for writes.',
      1,
      1000,
    ),
    breaker_cooldown: t.duration(
      5_000,
      'Proxy mode: how long a shard tripped by breaker_failures is skipped for writes before one write probes it again.',
    ),
    keepalive_time: t.duration(10_000, 'gRPC keepalive ping interval toward stores and from the servers.'),
    keepalive_timeout: t.duration(
      5_000,
      'gRPC keepalive (clients and servers): a peer that does not answer a ping in this time is cut off.',
    ),
  }),
  search: t.section({
    column_memory: t.size(
      128 * 1024 ** 2,
      'Memory each thread that reads sealed fractions (a shard\'s search thread; its shard thread when it answers a search itself) may keep in columns for aggregations and numeric range filters (keyword columns 4 bytes a document, decoded numeric columns 8, a numeric column read for ranges its size on disk, the tokens of a text or path field 4 bytes a document and 4 a token, per-block counts); past it the least recently used column is dropped and read from its file again when next needed (docs/logstore.md, "Memory").',
    ),
    timeout: t.duration(
      30_000,
      'Longest run of one search (query, aggregations, histogram) over the stored data; then it stops where it stands. Elasticsearch _search answers what was found by then with "timed_out": true (as Elasticsearch past a timeout; _count adds "timed_out": true); the search API (/search, /aggregate, /histogram, /complex-search, export, async search, gRPC) answers 504 search_timeout. The deadline runs from the request, so a search queued behind another counts its wait. In proxy mode each store is sent it (within cluster.request_timeout less a tenth, at most 1 s), and a store\'s part comes back timed out rather than as a failed shard (0: no limit).',
    ),
  }),
  async_search: t.section({
    max_searches: t.int(
      64,
      'Async searches kept at once (running or finished); one more is refused with 429.',
      1,
      100_000,
    ),
    keep: t.duration(3_600_000, 'How long a finished async search stays fetchable.'),
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

export type LogstoreConfig = InferShape<typeof logstoreShape>;

export class LogstoreConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: Problem[],
  ) {
    super(`${file}: ${problems.length} problem(s)\n${problems.map((p) => `  ${formatProblem(p)}`).join('\n')}`);
    this.name = 'LogstoreConfigError';
  }
}

/** Host and port of a "<host>:<port>" or ":<port>" address; null when it does not parse. */
export function parseAddr(addr: string): { host: string; port: number } | null {
  const m = /^(.*):(\d{1,5})$/.exec(addr.trim());
  if (!m) return null;
  const port = Number(m[2]);
  if (port > 65535) return null;
  const host = m[1]!.replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? '0.0.0.0' : host, port };
}

/** Parses and validates YAML text; every problem names its key. */
export function parseLogstoreConfig(text: string): { config: LogstoreConfig; problems: Problem[] } {
  const read = readYamlMapping(text, 'server, storage, mapping, limits');
  if ('problem' in read) return { config: validate(logstoreShape, {}).value, problems: [read.problem] };
  const raw = read.raw;
  // An empty YAML section ("limits:" with nothing under it) reads as null: it means "all defaults".
  const input: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  for (const [k, v] of Object.entries(input)) if (v === null && k in logstoreShape) input[k] = {};
  const { value, problems } = validate(logstoreShape, input);
  for (const key of ['http_addr', 'grpc_addr', 'debug_addr'] as const) {
    if (!parseAddr(value.server[key]))
      problems.push({
        path: `server.${key}`,
        expected: '"<host>:<port>" or ":<port>"',
        found: JSON.stringify(value.server[key]),
      });
  }
  if (value.storage.frac_size < 4096)
    problems.push({ path: 'storage.frac_size', expected: 'at least 4KB', found: String(value.storage.frac_size) });
  value.cluster.hot_stores.forEach((a, i) => {
    if (!parseAddr(a) || parseAddr(a)!.host === '0.0.0.0')
      problems.push({
        path: `cluster.hot_stores[${i}]`,
        expected: 'a store gRPC address "<host>:<port>"',
        found: JSON.stringify(a),
      });
  });
  if (value.cluster.hot_stores.length % value.cluster.hot_replicas !== 0) {
    problems.push({
      path: 'cluster.hot_stores',
      expected: `a number of stores divisible by cluster.hot_replicas (${value.cluster.hot_replicas}): shards are groups of hot_replicas consecutive stores`,
      found: `${value.cluster.hot_stores.length} stores`,
    });
  }
  if (value.storage.data_dir === '')
    problems.push({ path: 'storage.data_dir', expected: 'a directory path', found: 'an empty string' });
  return { config: value, problems };
}

/** Reads and validates a config file; throws LogstoreConfigError listing every problem. */
export function loadLogstoreConfig(file: string): LogstoreConfig {
  return loadConfigFile(file, parseLogstoreConfig, (f, problems) => new LogstoreConfigError(f, problems));
}
