// What every route of the web listener shares: the pooler, SSO runtime, metrics, log tap, and request state.
import type { Logger } from 'pino';
import type { PoolerControl } from '../control.js';
import type { AuthResult, Access } from './auth/resolve.js';
import type { PeerInfo } from './auth/proxy.js';
import type { SsoRuntime } from './auth/sso.js';
import type { LogTap } from './log-tap.js';
import type { WebMetrics } from './web-metrics.js';

export interface WebContext {
  control: PoolerControl;
  sso: SsoRuntime;
  metrics: WebMetrics;
  tap: LogTap;
  /** Logger with target pooler::web. */
  log: Logger;
  version: string;
  /** Directory holding the built console: index.html and assets/. */
  staticDir: string;
}

/** Per-request state set by the auth hook and read by routes and the access log. */
export interface RequestState {
  startedAt: bigint;
  peer: PeerInfo;
  auth: AuthResult;
  access: Access;
}

declare module 'fastify' {
  interface FastifyRequest {
    tp: RequestState;
  }
  interface FastifyContextConfig {
    access?: Access;
  }
}
