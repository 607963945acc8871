// The access log: one line per response on target pooler::web::access, fields and levels as the spec lists them.
import type { Logger } from 'pino';
import { formatAccessLogfmt, type LogHub } from '../../shared/logger.js';
import type { AuthSource, Role } from './auth/resolve.js';

export const ACCESS_TARGET = 'pooler::web::access';

export interface AccessRecord {
  method: string;
  path: string;
  query: boolean;
  status: number;
  bytes: number;
  latency_ms: number;
  peer: string;
  auth_role: Role;
  auth_source: AuthSource | '-';
  auth_user: string;
}

/** Paths whose successful reads carry personal data (SQL text, log lines) and are logged at info. */
export function isPersonalDataPath(path: string): boolean {
  return (
    path === '/api/logs' ||
    path === '/api/logs/history' ||
    path.startsWith('/api/prepared/text/') ||
    path === '/api/interner/top' ||
    path === '/api/top/queries'
  );
}

/** info: admin actions, personal-data reads, /api/auth/* and /api/sso/*, every non-2xx; debug: other 2xx. */
export function accessLevel(method: string, path: string, status: number): 'info' | 'debug' {
  if (status < 200 || status >= 300) return 'info';
  if (method === 'POST' && path.startsWith('/api/admin/')) return 'info';
  if (isPersonalDataPath(path) || path.startsWith('/api/auth/') || path.startsWith('/api/sso/')) return 'info';
  return 'debug';
}

export class AccessLog {
  private readonly log: Logger;

  constructor(private readonly hub: LogHub) {
    this.log = hub.get(ACCESS_TARGET);
  }

  write(rec: AccessRecord): void {
    const level = accessLevel(rec.method, rec.path, rec.status);
    if (!this.log.isLevelEnabled(level)) return;
    // Logfmt output renders the fields as the access line itself; JSON lines also carry it as msg.
    if (this.hub.format === 'json') this.log[level]({ ...rec }, formatAccessLogfmt({ target: ACCESS_TARGET, ...rec }));
    else this.log[level]({ ...rec });
  }
}
