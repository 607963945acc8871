// Role resolution for one request: Basic first, then an SSO token (Bearer, cookie, ?token=), else Anonymous.
import type { PoolerConfig } from '../../../config/pooler.js';
import { basicMatches, parseBasic } from './basic.js';
import type { SsoFailureReason, SsoRuntime } from './sso.js';

export type Role = 'admin' | 'sso' | 'anonymous' | 'rejected';
export type AuthSource = 'basic' | 'sso' | 'none';

export interface AuthResult {
  role: Role;
  source: AuthSource;
  /** admin_username for Basic, preferred_username (or sub) for SSO, null otherwise. */
  user: string | null;
  /** Whether any credential arrived (a wrong one makes the request rejected even when anonymous reads are on). */
  credentials: boolean;
  /** Why the SSO credential failed, when it did. */
  ssoFailure?: SsoFailureReason | 'https_required';
  /** `exp` of a valid token (seconds since the epoch). */
  exp?: number;
}

export interface AuthInput {
  authorization: string | undefined;
  cookie: string | undefined;
  queryToken: string | undefined;
  /** The request arrived as HTTPS through a trusted proxy. */
  secure: boolean;
}

export const SSO_COOKIE = 'sso_access_token';

/** A cookie value, percent-decoded when it is valid percent-encoding (a JWT never needs it), else as sent. */
function cookieValue(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch (err) {
    if (err instanceof URIError) return v;
    throw err;
  }
}

/** The SSO token, by carrier priority: Bearer header, then the cookie, then `?token=`. */
export function extractToken(input: Pick<AuthInput, 'authorization' | 'cookie' | 'queryToken'>): string | null {
  const bearer = input.authorization ? /^Bearer\s+(\S+)\s*$/i.exec(input.authorization) : null;
  if (bearer) return bearer[1]!;
  if (input.cookie) {
    for (const part of input.cookie.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === SSO_COOKIE) {
        const v = part.slice(eq + 1).trim();
        if (v) return cookieValue(v);
      }
    }
  }
  return input.queryToken ? input.queryToken : null;
}

/**
 * Resolves the role. Rules (spec "Resolution rules"): Basic is tried first and a correct pair is Admin
 * whatever the SSO state; a wrong Basic pair does not block a valid JWT; with SSO off, tokens are not
 * credentials at all; with sso_require_https, tokens over plain HTTP fail.
 */
export async function resolveAuth(
  input: AuthInput,
  config: PoolerConfig,
  sso: SsoRuntime,
  onSsoFailure: (reason: SsoFailureReason) => void,
): Promise<AuthResult> {
  const basic = parseBasic(input.authorization);
  if (basic && basicMatches(basic, config.general.admin_username, config.general.admin_password)) {
    return { role: 'admin', source: 'basic', user: config.general.admin_username, credentials: true };
  }
  const token = sso.usable ? extractToken(input) : null;
  if (token !== null) {
    if (config.web.sso_require_https && !input.secure) {
      return { role: 'rejected', source: 'sso', user: null, credentials: true, ssoFailure: 'https_required' };
    }
    const r = await sso.verify(token, config.web);
    if (r.ok) {
      const result: AuthResult = {
        role: r.admin ? 'admin' : 'sso',
        source: 'sso',
        user: r.username,
        credentials: true,
      };
      if (r.exp !== undefined) result.exp = r.exp;
      return result;
    }
    onSsoFailure(r.reason);
    return { role: 'rejected', source: 'sso', user: null, credentials: true, ssoFailure: r.reason };
  }
  if (
    basic ||
    (input.authorization !== undefined && input.authorization.trim() !== '' && !/^Bearer\s/i.test(input.authorization))
  ) {
    return { role: 'rejected', source: 'basic', user: null, credentials: true };
  }
  if (config.web.ui_anonymous) return { role: 'anonymous', source: 'none', user: null, credentials: false };
  return { role: 'rejected', source: 'none', user: null, credentials: false };
}

/** What a route needs: nothing, a public read, a personal-data read (Sso) or Admin. */
export type Access = 'none' | 'public' | 'personal' | 'admin';

export type Decision = { allow: true } | { allow: false; status: 401 | 403 };

/** Whether a resolved role may use a route of the given access level. */
export function authorize(auth: AuthResult, access: Access): Decision {
  if (access === 'none') return { allow: true };
  if (auth.role === 'rejected') return { allow: false, status: 401 };
  if (auth.role === 'anonymous') return access === 'public' ? { allow: true } : { allow: false, status: 401 };
  if (access === 'admin' && auth.role !== 'admin') return { allow: false, status: 403 };
  return { allow: true };
}
