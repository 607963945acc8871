// Prometheus metrics of the log store, served on the debug address.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { StorageProblem } from '../storage/shard.js';

/** The kinds of StorageProblem, each reported (0 when none) so alerts can test `> 0` without `absent()`. */
const PROBLEM_KINDS: StorageProblem['kind'][] = [
  'wal_tail_dropped',
  'fraction_quarantined',
  'quarantine_not_empty',
  'disk_full',
  'write_failed',
];

export class LogstoreMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'tidepool_logstore_http_requests_total',
    help: 'HTTP requests by route and status.',
    labelNames: ['route', 'status'],
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'tidepool_logstore_http_request_duration_seconds',
    help: 'HTTP request duration by route.',
    labelNames: ['route'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly docs = new Counter({
    name: 'tidepool_logstore_ingested_docs_total',
    help: 'Documents stored (acknowledged).',
    registers: [this.registry],
  });
  readonly docErrors = new Counter({
    name: 'tidepool_logstore_rejected_docs_total',
    help: 'Bulk items that failed.',
    registers: [this.registry],
  });
  readonly rejectedBulks = new Counter({
    name: 'tidepool_logstore_rejected_bulks_total',
    help: 'Writes rejected for overload (a bulk: its items answered 429 inside a 200; a single document: 429).',
    registers: [this.registry],
  });
  readonly queued = new Gauge({
    name: 'tidepool_logstore_queued_bulks',
    help: 'Writes waiting for a slot (limits.bulk_queue).',
    registers: [this.registry],
  });
  readonly inflight = new Gauge({
    name: 'tidepool_logstore_inflight_bulks',
    help: 'Bulk requests being processed.',
    registers: [this.registry],
  });
  /** Where storage problems are read at each scrape (the shards' status); none until watchStorage(). */
  private problemSource: (() => Promise<StorageProblem[]>) | null = null;
  readonly storageProblems = new Gauge({
    name: 'tidepool_logstore_storage_problems',
    help: 'Data lost or set aside since start (write-ahead tails dropped, sealed fractions quarantined) or left in quarantine/ by an earlier run, by kind.',
    labelNames: ['kind'],
    registers: [this.registry],
    collect: async () => {
      if (!this.problemSource) return;
      const problems = await this.problemSource();
      for (const kind of PROBLEM_KINDS)
        this.storageProblems.set({ kind }, problems.filter((p) => p.kind === kind).length);
    },
  });

  /** Reports the problems `source` lists on /metrics (single and store modes: the local shards). */
  watchStorage(source: () => Promise<StorageProblem[]>): void {
    this.problemSource = source;
  }
}
