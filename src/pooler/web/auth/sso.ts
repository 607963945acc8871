// SSO runtime: the RSA public key and audience loaded from [web], JWT verification with jose, failure reasons.
import { readFileSync } from 'node:fs';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Logger } from 'pino';
import type { WebConfig } from '../../../config/pooler.js';

export const SSO_FAILURE_REASONS = ['signature', 'expired', 'audience', 'no_username', 'allowlist'] as const;
export type SsoFailureReason = (typeof SSO_FAILURE_REASONS)[number];

/** RSA signature algorithms only: `none` and HMAC (a public key used as an HS256 secret) never pass. */
const RSA_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];

export type SsoState = 'disabled' | 'loaded' | 'failed';

export type SsoResult =
  | { ok: true; username: string; admin: boolean; exp: number | undefined; groups: string[] }
  | { ok: false; reason: SsoFailureReason; detail: string };

export class SsoRuntime {
  state: SsoState = 'disabled';
  /** Why SSO was asked for but could not load; null unless state is 'failed'. */
  error: string | null = null;
  private key: KeyObject | null = null;

  constructor(private readonly log: Logger) {}

  /** Reads the key file and checks the SSO settings; called at start and on every RELOAD. */
  load(web: WebConfig): void {
    const before = this.state;
    this.key = null;
    this.error = null;
    if (!web.sso_enabled) {
      this.state = 'disabled';
      if (before !== 'disabled') this.log.info('sso disabled');
      return;
    }
    try {
      if (web.sso_audience.length === 0) throw new Error('sso_audience is empty; at least one audience is required');
      if (!web.sso_public_key_file) throw new Error('sso_public_key_file is not set');
      let pem: string;
      try {
        pem = readFileSync(web.sso_public_key_file, 'utf8');
      } catch (err) {
        throw new Error(`cannot read sso_public_key_file ${web.sso_public_key_file}: ${(err as Error).message}`);
      }
      let key: KeyObject;
      try {
        key = createPublicKey({ key: pem, format: 'pem' });
      } catch (err) {
        throw new Error(
          `sso_public_key_file ${web.sso_public_key_file} holds no PEM public key: ${(err as Error).message}`,
        );
      }
      if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'rsa-pss') {
        throw new Error(
          `sso_public_key_file ${web.sso_public_key_file} holds a ${key.asymmetricKeyType ?? 'non-RSA'} key, not an RSA key`,
        );
      }
      this.key = key;
      this.state = 'loaded';
      this.log.info({ key_file: web.sso_public_key_file, audience: web.sso_audience.join(',') }, 'sso loaded');
    } catch (err) {
      this.state = 'failed';
      this.error = (err as Error).message;
      this.log.error({ error: this.error }, 'sso config error: SSO stays off until a RELOAD fixes it');
    }
  }

  get usable(): boolean {
    return this.state === 'loaded' && this.key !== null;
  }

  /** Verifies a JWT against the loaded key and the [web] SSO rules. */
  async verify(token: string, web: WebConfig): Promise<SsoResult> {
    if (!this.key) return { ok: false, reason: 'signature', detail: 'sso not loaded' };
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: RSA_ALGORITHMS,
        audience: [...web.sso_audience],
        clockTolerance: 5,
      }));
    } catch (err) {
      return { ok: false, reason: failureReason(err), detail: (err as Error).message };
    }
    const preferred = payload['preferred_username'];
    const username =
      typeof preferred === 'string' && preferred !== ''
        ? preferred
        : typeof payload.sub === 'string' && payload.sub !== ''
          ? payload.sub
          : null;
    if (username === null)
      return { ok: false, reason: 'no_username', detail: 'token has neither preferred_username nor sub' };
    if (!web.sso_allowed_users.includes('*') && !web.sso_allowed_users.includes(username)) {
      return { ok: false, reason: 'allowlist', detail: `user ${username} is not in sso_allowed_users` };
    }
    const claim = payload[web.sso_groups_claim];
    const groups = Array.isArray(claim)
      ? claim.filter((g): g is string => typeof g === 'string')
      : typeof claim === 'string'
        ? [claim]
        : [];
    const admin = web.sso_admin_groups.length > 0 && groups.some((g) => web.sso_admin_groups.includes(g));
    return { ok: true, username, admin, exp: payload.exp, groups };
  }
}

function failureReason(err: unknown): SsoFailureReason {
  if (err instanceof joseErrors.JWTExpired) return 'expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'aud') return 'audience';
  return 'signature';
}
