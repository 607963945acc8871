// Authenticates a client against a configured secret: trust, cleartext, md5 or SCRAM-SHA-256.
import { timingSafeEqual } from 'node:crypto';
import { randomBytesPooled } from '../random-pool.js';
import { SqlState } from '../../protocol/codes.js';
import { parsePasswordMessage, parseSASLInitialResponse } from '../../protocol/reader.js';
import {
  writeAuthenticationCleartextPassword,
  writeAuthenticationMD5Password,
  writeAuthenticationSASL,
  writeAuthenticationSASLContinue,
  writeAuthenticationSASLFinal,
} from '../../protocol/writer.js';
import { md5Inner, verifyMd5 } from './md5.js';
import {
  ScramMalformed,
  ScramServer,
  cachedScramSecret,
  clientKeyFrom,
  saltedPassword,
  secretFromPassword,
  type ScramSecret,
} from './scram.js';
import { createHash } from 'node:crypto';

export type AuthType = 'scram-sha-256' | 'md5' | 'plain' | 'trust';
export type AuthMethod = 'trust' | 'plain' | 'md5' | 'scram';

/** Outcome of a finished exchange: ok, and the SCRAM ClientKey when the client proved one. */
export type AuthResult =
  | { ok: true; clientKey: Buffer | null; scramSecret: ScramSecret | null }
  | { ok: false; message: string; sqlstate: string };

const derivedSecrets = new Map<string, ScramSecret>();
const NO_SALT = Buffer.alloc(0);

/** SCRAM secret for a plaintext password, derived once per process (PBKDF2 is slow on purpose). */
export function scramSecretFor(password: string): ScramSecret {
  let s = derivedSecrets.get(password);
  if (!s) {
    s = secretFromPassword(password);
    derivedSecrets.set(password, s);
  }
  return s;
}

export function chooseMethod(secret: string, authType: AuthType): AuthMethod {
  if (secret === '') return 'trust';
  if (authType === 'plain') return 'plain';
  if (/^md5[0-9a-f]{32}$/.test(secret)) return 'md5';
  if (secret.startsWith('SCRAM-SHA-256$')) return 'scram';
  if (authType === 'trust') return 'trust';
  return authType === 'md5' ? 'md5' : 'scram';
}

function constantEqual(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y) && a.length === b.length;
}

/** A password-phase state machine: first() gives the challenge, step() consumes each PasswordMessage. */
export class ClientAuth {
  readonly method: AuthMethod;
  private readonly md5Salt: Buffer;
  private scram: ScramServer | null = null;
  private scramSecret: ScramSecret | null = null;
  private stage = 0;

  constructor(
    private readonly secret: string,
    private readonly username: string,
    authType: AuthType,
  ) {
    this.method = chooseMethod(secret, authType);
    this.md5Salt = this.method === 'md5' ? randomBytesPooled(4) : NO_SALT;
  }

  private failed(): AuthResult {
    return {
      ok: false,
      message: `password authentication failed for user "${this.username}"`,
      sqlstate: SqlState.InvalidPassword,
    };
  }

  /** The first Authentication request, or null for trust. */
  first(): Buffer | null {
    switch (this.method) {
      case 'trust':
        return null;
      case 'plain':
        return writeAuthenticationCleartextPassword();
      case 'md5':
        return writeAuthenticationMD5Password(this.md5Salt);
      case 'scram':
        return writeAuthenticationSASL(['SCRAM-SHA-256']);
    }
  }

  /** Consumes one PasswordMessage body: returns a reply to send and/or a final result. */
  step(body: Buffer): { reply?: Buffer; result?: AuthResult } {
    switch (this.method) {
      case 'trust':
        return { result: { ok: true, clientKey: null, scramSecret: null } };
      case 'plain':
        return { result: this.checkCleartext(parsePasswordMessage(body)) };
      case 'md5':
        return {
          result: verifyMd5(md5Inner(this.secret, this.username), this.md5Salt, parsePasswordMessage(body))
            ? { ok: true, clientKey: null, scramSecret: null }
            : this.failed(),
        };
      case 'scram':
        return this.scramStep(body);
    }
  }

  private checkCleartext(password: string): AuthResult {
    const scram = cachedScramSecret(this.secret);
    if (scram) {
      const clientKey = clientKeyFrom(saltedPassword(password, scram.salt, scram.iterations));
      const stored = createHash('sha256').update(clientKey).digest();
      return timingSafeEqual(stored, scram.storedKey) ? { ok: true, clientKey, scramSecret: scram } : this.failed();
    }
    if (/^md5[0-9a-f]{32}$/.test(this.secret)) {
      return constantEqual(md5Inner(password, this.username), this.secret.slice(3))
        ? { ok: true, clientKey: null, scramSecret: null }
        : this.failed();
    }
    return constantEqual(password, this.secret) ? { ok: true, clientKey: null, scramSecret: null } : this.failed();
  }

  private scramStep(body: Buffer): { reply?: Buffer; result?: AuthResult } {
    if (this.stage === 0) {
      const { mechanism, data } = parseSASLInitialResponse(body);
      if (mechanism !== 'SCRAM-SHA-256')
        return {
          result: {
            ok: false,
            message: `unsupported SASL mechanism "${mechanism}"`,
            sqlstate: SqlState.InvalidAuthorization,
          },
        };
      this.scramSecret = cachedScramSecret(this.secret) ?? scramSecretFor(this.secret);
      this.scram = new ScramServer(this.scramSecret);
      this.stage = 1;
      return { reply: writeAuthenticationSASLContinue(this.scram.start(data)) };
    }
    try {
      const final = this.scram!.finish(body.toString('utf8'));
      const configured = cachedScramSecret(this.secret);
      return {
        reply: writeAuthenticationSASLFinal(final),
        result: { ok: true, clientKey: this.scram!.clientKey, scramSecret: configured },
      };
    } catch (err) {
      // A message that does not parse is the caller's 08P01; a wrong proof is a wrong password.
      if (err instanceof ScramMalformed) throw err;
      return { result: this.failed() };
    }
  }
}
