// What the HTTP routes share: the store, the mapping, limits, logger and metrics.
import type { Logger } from 'pino';
import type { LogstoreConfig } from '../../config/logstore.js';
import type { MappingSpec } from '../mapping.js';
import type { Store } from '../store.js';
import type { LogstoreMetrics } from './metrics.js';

export interface HttpContext {
  store: Store;
  mapping: MappingSpec;
  config: LogstoreConfig;
  log: Logger;
  metrics: LogstoreMetrics;
  /** Bulks being processed now. */
  inflight: { bulks: number };
}
