// The listener's own Prometheus series (pooler_web_*) and the process series, in a private registry.
import { Counter, Gauge, Registry } from 'prom-client';
import type { SsoRuntime } from './auth/sso.js';
import type { AuthSource, Role } from './auth/resolve.js';
import type { SsoFailureReason } from './auth/sso.js';

export class WebMetrics {
  readonly registry = new Registry();
  private readonly authAttempts: Counter<'role' | 'source'>;
  private readonly requests: Counter<'status_class' | 'role'>;
  private readonly ssoErrors: Counter<'reason'>;

  constructor(sso: SsoRuntime) {
    const registers = [this.registry];
    new Gauge({
      name: 'pooler_web_sso_enabled',
      help: '1 when SSO loaded, else 0.',
      registers,
      collect() {
        this.set(sso.state === 'loaded' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'pooler_web_sso_config_error',
      help: '1 when sso_enabled = true but the SSO runtime failed to load.',
      registers,
      collect() {
        this.set(sso.state === 'failed' ? 1 : 0);
      },
    });
    this.authAttempts = new Counter({
      name: 'pooler_web_auth_attempts_total',
      help: 'API requests by resolved role and credential source.',
      labelNames: ['role', 'source'],
      registers,
    });
    this.requests = new Counter({
      name: 'pooler_web_requests_total',
      help: 'Web requests by status class and resolved role.',
      labelNames: ['status_class', 'role'],
      registers,
    });
    this.ssoErrors = new Counter({
      name: 'pooler_web_sso_validation_errors_total',
      help: 'JWT validation failures by reason.',
      labelNames: ['reason'],
      registers,
    });
    // A few process series by hand: prom-client's default set names gauges `_total`, which promtool rejects.
    new Gauge({
      name: 'pooler_process_resident_memory_bytes',
      help: 'Resident memory of the pooler process.',
      registers,
      collect() {
        this.set(process.memoryUsage().rss);
      },
    });
    new Gauge({
      name: 'pooler_process_heap_used_bytes',
      help: 'V8 heap in use.',
      registers,
      collect() {
        this.set(process.memoryUsage().heapUsed);
      },
    });
    new Counter({
      name: 'pooler_process_cpu_seconds_total',
      help: 'User and system CPU time of the pooler process.',
      registers,
      collect() {
        const u = process.cpuUsage();
        this.reset();
        this.inc((u.user + u.system) / 1e6);
      },
    });
    const started = Date.now() / 1000 - process.uptime();
    new Gauge({
      name: 'pooler_process_start_time_seconds',
      help: 'Start time of the pooler process since the Unix epoch.',
      registers,
      collect() {
        this.set(Math.round(started));
      },
    });
  }

  authAttempt(role: Role, source: AuthSource): void {
    this.authAttempts.inc({ role, source });
  }

  request(status: number, role: Role): void {
    this.requests.inc({ status_class: `${Math.floor(status / 100)}xx`, role });
  }

  ssoValidationError(reason: SsoFailureReason): void {
    this.ssoErrors.inc({ reason });
  }
}
