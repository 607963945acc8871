// The listener's own Prometheus series (pooler_web_*) and the process series, in a private registry.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
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
      name: 'pooler_web_sso_enabled', help: '1 when SSO loaded, else 0.', registers,
      collect() { this.set(sso.state === 'loaded' ? 1 : 0); },
    });
    new Gauge({
      name: 'pooler_web_sso_config_error', help: '1 when sso_enabled = true but the SSO runtime failed to load.', registers,
      collect() { this.set(sso.state === 'failed' ? 1 : 0); },
    });
    this.authAttempts = new Counter({
      name: 'pooler_web_auth_attempts_total', help: 'API requests by resolved role and credential source.', labelNames: ['role', 'source'], registers,
    });
    this.requests = new Counter({
      name: 'pooler_web_requests_total', help: 'Web requests by status class and resolved role.', labelNames: ['status_class', 'role'], registers,
    });
    this.ssoErrors = new Counter({
      name: 'pooler_web_sso_validation_errors_total', help: 'JWT validation failures by reason.', labelNames: ['reason'], registers,
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'pooler_' });
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
