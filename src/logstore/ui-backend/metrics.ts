// Prometheus metrics of the UI backend, served on server.debug_addr /metrics.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export class UiMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'tidepool_logstore_ui_requests_total',
    help: 'API requests (HTTP and gRPC) by route and status.',
    labelNames: ['route', 'status'],
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'tidepool_logstore_ui_request_duration_seconds',
    help: 'API request duration by route.',
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly logstoreCalls = new Counter({
    name: 'tidepool_logstore_ui_logstore_calls_total',
    help: 'Calls to the log store by method and result (ok or the gRPC status name).',
    labelNames: ['method', 'result'],
    registers: [this.registry],
  });
  readonly logstoreDuration = new Histogram({
    name: 'tidepool_logstore_ui_logstore_call_duration_seconds',
    help: 'Successful log-store calls by method.',
    labelNames: ['method'],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'tidepool_logstore_ui_logstore_retries_total',
    help: 'Retries of idempotent log-store calls on the next address.',
    labelNames: ['method'],
    registers: [this.registry],
  });
  readonly limitRejections = new Counter({
    name: 'tidepool_logstore_ui_limit_rejections_total',
    help: 'Requests refused by a handlers.logstore_api limit.',
    labelNames: ['limit'],
    registers: [this.registry],
  });
  readonly exports = new Gauge({
    name: 'tidepool_logstore_ui_exports_running',
    help: 'Exports running (max_parallel_export_requests).',
    registers: [this.registry],
  });
  readonly exportedDocs = new Counter({
    name: 'tidepool_logstore_ui_exported_docs_total',
    help: 'Documents written by exports.',
    labelNames: ['format'],
    registers: [this.registry],
  });
  readonly tails = new Gauge({
    name: 'tidepool_logstore_ui_tails_open',
    help: 'Live tails open.',
    registers: [this.registry],
  });
}
