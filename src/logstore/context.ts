// What the HTTP and gRPC APIs share: the backend (local store or cluster), the mapping, limits, logger and metrics.
import type { Logger } from 'pino';
import type { LogstoreConfig } from '../config/logstore.js';
import type { MappingSpec } from './mapping.js';
import type { AsyncSearches } from './api/async-search.js';
import type { LogBackend } from './backend.js';
import type { WriteAdmission } from './es/admission.js';
import type { BulkBudget } from './ingest/bulk-budget.js';
import type { LogstoreMetrics } from './http/metrics.js';

export interface HttpContext {
  /** The local store (single mode) or the cluster of stores (proxy mode). */
  store: LogBackend;
  asyncSearches: AsyncSearches;
  mapping: MappingSpec;
  config: LogstoreConfig;
  log: Logger;
  metrics: LogstoreMetrics;
  /** Bulks being processed now. */
  inflight: { bulks: number };
  /** Slots and queue of writes (made from limits.* on first use when absent). */
  admission?: WriteAdmission;
  /** Memory of the bulks in flight (made from limits.bulk_memory on first use when absent). */
  bulkBudget?: BulkBudget;
}
