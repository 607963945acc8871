// SCRAM-SHA-256 (RFC 5802/7677) as PostgreSQL uses it: the pooler as server toward clients and as
// client toward PostgreSQL, including logging in with a ClientKey recovered from a client's proof.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { randomBytesPooled } from '../random-pool.js';

export interface ScramSecret {
  iterations: number;
  salt: Buffer;
  storedKey: Buffer;
  serverKey: Buffer;
}

const hmac = (key: Buffer, data: string | Buffer): Buffer => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();
const xor = (a: Buffer, b: Buffer): Buffer => {
  const out = Buffer.allocUnsafe(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
};

export function saltedPassword(password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
}

export function clientKeyFrom(salted: Buffer): Buffer {
  return hmac(salted, 'Client Key');
}

export function secretFromPassword(password: string, salt: Buffer = randomBytes(16), iterations = 4096): ScramSecret {
  const salted = saltedPassword(password, salt, iterations);
  return { iterations, salt, storedKey: sha256(clientKeyFrom(salted)), serverKey: hmac(salted, 'Server Key') };
}

const parsedSecrets = new Map<string, ScramSecret | null>();

/** parseScramSecret, remembered per secret text (a login parses its user's secret; the same few secrets come again
 * and again). Bounded: past 10 000 distinct texts (auth_query users) the memory starts over. */
export function cachedScramSecret(s: string): ScramSecret | null {
  let v = parsedSecrets.get(s);
  if (v === undefined) {
    if (parsedSecrets.size >= 10_000) parsedSecrets.clear();
    v = parseScramSecret(s);
    parsedSecrets.set(s, v);
  }
  return v;
}

/** Parses "SCRAM-SHA-256$<iter>:<salt>$<stored>:<server>" (the pg_authid format), or null. */
export function parseScramSecret(s: string): ScramSecret | null {
  const m = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/.exec(s);
  if (!m) return null;
  const storedKey = Buffer.from(m[3]!, 'base64');
  const serverKey = Buffer.from(m[4]!, 'base64');
  if (storedKey.length !== 32 || serverKey.length !== 32) return null;
  return { iterations: Number(m[1]), salt: Buffer.from(m[2]!, 'base64'), storedKey, serverKey };
}

function attrs(msg: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of msg.split(',')) {
    const eq = part.indexOf('=');
    if (eq === 1) out.set(part[0]!, part.slice(2));
  }
  return out;
}

export class ScramError extends Error {}
/** A client's SCRAM message that does not parse (08P01), as against a wrong proof (28P01). */
export class ScramMalformed extends ScramError {}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const saltTexts = new WeakMap<ScramSecret, string>();

/** "s=<salt>,i=<iterations>" of a server-first-message, made once per secret. */
function saltAndIterations(secret: ScramSecret): string {
  let t = saltTexts.get(secret);
  if (t === undefined) {
    t = `s=${secret.salt.toString('base64')},i=${secret.iterations}`;
    saltTexts.set(secret, t);
  }
  return t;
}

/** Server side of one SCRAM exchange with a client. */
export class ScramServer {
  private clientFirstBare = '';
  private serverFirst = '';
  private nonce = '';
  /** The client's ClientKey, known after a successful finish(). */
  clientKey: Buffer | null = null;

  constructor(private readonly secret: ScramSecret) {}

  /** client-first-message -> server-first-message. */
  start(clientFirst: string): string {
    const gs2 = /^([ny]|p=[^,]*),([^,]*),(.*)$/.exec(clientFirst);
    if (!gs2) throw new ScramMalformed('malformed SCRAM client-first-message');
    if (gs2[1]!.startsWith('p')) throw new ScramMalformed('SCRAM channel binding is not supported');
    this.clientFirstBare = gs2[3]!;
    const cnonce = attrs(this.clientFirstBare).get('r');
    if (!cnonce) throw new ScramMalformed('SCRAM client-first-message has no nonce');
    this.nonce = cnonce + randomBytesPooled(18).toString('base64');
    this.serverFirst = `r=${this.nonce},${saltAndIterations(this.secret)}`;
    return this.serverFirst;
  }

  /** client-final-message -> server-final-message, or throws ScramError when the proof is wrong. */
  finish(clientFinal: string): string {
    const a = attrs(clientFinal);
    const proofB64 = a.get('p');
    const cut = clientFinal.lastIndexOf(',p=');
    // A proof that is not 32 bytes of standard base64 is a malformed message, as the nonce's echo missing is.
    if (!proofB64 || a.get('r') !== this.nonce || cut < 0 || !BASE64.test(proofB64))
      throw new ScramMalformed('malformed SCRAM client-final-message');
    const proof = Buffer.from(proofB64, 'base64');
    if (proof.length !== 32) throw new ScramMalformed('malformed SCRAM client-final-message');
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${clientFinal.slice(0, cut)}`;
    const clientKey = xor(proof, hmac(this.secret.storedKey, authMessage));
    if (!timingSafeEqual(sha256(clientKey), this.secret.storedKey))
      throw new ScramError('password authentication failed');
    this.clientKey = clientKey;
    return `v=${hmac(this.secret.serverKey, authMessage).toString('base64')}`;
  }
}

/** ClientKey and ServerKey derived from a plaintext password under PostgreSQL's salt and iteration count, remembered:
 * a role's salt stays the same until its password is set again, so only the first server login of a pool (and the
 * first after ALTER ROLE ... PASSWORD, which brings a new salt) runs PBKDF2, a few milliseconds of the event loop
 * each. Bounded: past 1 000 entries the memory starts over. */
const derivedKeys = new Map<string, { clientKey: Buffer; serverKey: Buffer }>();

export function keysFromPassword(
  password: string,
  salt: Buffer,
  iterations: number,
): { clientKey: Buffer; serverKey: Buffer } {
  const key = `${iterations}:${salt.toString('base64')}:${password}`;
  let keys = derivedKeys.get(key);
  if (!keys) {
    const salted = saltedPassword(password, salt, iterations);
    keys = { clientKey: clientKeyFrom(salted), serverKey: hmac(salted, 'Server Key') };
    if (derivedKeys.size >= 1000) derivedKeys.clear();
    derivedKeys.set(key, keys);
  }
  return keys;
}

/** What a client of PostgreSQL can prove with: a plaintext password, or a ClientKey plus the secret it matches. */
export type ScramCredential = { password: string } | { clientKey: Buffer; secret: ScramSecret };

/** Client side of one SCRAM exchange with PostgreSQL. */
export class ScramClient {
  private readonly cnonce = randomBytes(18).toString('base64');
  private clientFirstBare = '';
  private expectedServerSignature: Buffer | null = null;

  constructor(private readonly cred: ScramCredential) {}

  first(): string {
    this.clientFirstBare = `n=*,r=${this.cnonce}`;
    return `n,,${this.clientFirstBare}`;
  }

  /** server-first-message -> client-final-message. */
  final(serverFirst: string): string {
    const a = attrs(serverFirst);
    const nonce = a.get('r');
    const salt = Buffer.from(a.get('s') ?? '', 'base64');
    const iterations = Number(a.get('i'));
    if (!nonce || !nonce.startsWith(this.cnonce) || !salt.length || !Number.isInteger(iterations) || iterations <= 0) {
      throw new ScramError('malformed SCRAM server-first-message');
    }
    let clientKey: Buffer;
    let serverKey: Buffer;
    if ('password' in this.cred) {
      ({ clientKey, serverKey } = keysFromPassword(this.cred.password, salt, iterations));
    } else {
      if (!salt.equals(this.cred.secret.salt) || iterations !== this.cred.secret.iterations) {
        throw new ScramError(
          'the SCRAM secret configured for this user does not match the one in PostgreSQL (salt or iterations differ)',
        );
      }
      clientKey = this.cred.clientKey;
      serverKey = this.cred.secret.serverKey;
    }
    const withoutProof = `c=biws,r=${nonce}`;
    const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`;
    const proof = xor(clientKey, hmac(sha256(clientKey), authMessage));
    this.expectedServerSignature = hmac(serverKey, authMessage);
    return `${withoutProof},p=${proof.toString('base64')}`;
  }

  /** Checks server-final-message; throws when the server could not prove it knows the secret. */
  verify(serverFinal: string): void {
    const v = Buffer.from(attrs(serverFinal).get('v') ?? '', 'base64');
    const expected = this.expectedServerSignature;
    if (!expected || v.length !== expected.length || !timingSafeEqual(v, expected)) {
      throw new ScramError('PostgreSQL sent a wrong SCRAM server signature');
    }
  }
}
