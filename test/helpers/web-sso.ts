// Test helper: RSA key pairs made with node:crypto, PEM files, and JWTs signed (or forged) for SSO tests.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignJWT, type JWTPayload } from 'jose';

export interface TestKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicPem: string;
}

export function makeRsaKey(): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey, publicKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

export interface KeyDir {
  dir: string;
  /** Writes a PEM (or any text) to a file in the directory and returns its path. */
  write(name: string, text: string): string;
  cleanup(): void;
}

export function makeKeyDir(): KeyDir {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-sso-'));
  return {
    dir,
    write(name, text) {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      return file;
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TokenOptions {
  aud?: string | string[];
  /** Seconds from now; negative for an expired token. Default 600. */
  expiresIn?: number;
  preferred_username?: string;
  sub?: string;
  groups?: string[];
  claims?: JWTPayload;
  alg?: 'RS256' | 'PS256';
}

export async function signToken(key: TestKey, o: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: JWTPayload = { ...o.claims };
  if (o.preferred_username !== undefined) payload['preferred_username'] = o.preferred_username;
  if (o.groups !== undefined) payload['groups'] = o.groups;
  let jwt = new SignJWT(payload)
    .setProtectedHeader({ alg: o.alg ?? 'RS256', typ: 'JWT' })
    .setIssuedAt(now - 60)
    .setExpirationTime(now + (o.expiresIn ?? 600));
  if (o.aud !== undefined) jwt = jwt.setAudience(o.aud);
  if (o.sub !== undefined) jwt = jwt.setSubject(o.sub);
  return jwt.sign(key.privateKey);
}

function b64url(s: string): string {
  return Buffer.from(s).toString('base64url');
}

/** An unsigned token (`alg: none`). */
export function noneToken(payload: JWTPayload): string {
  return `${b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${b64url(JSON.stringify(payload))}.`;
}

/** The classic key-confusion forgery: HS256 with the RSA public key's PEM text as the HMAC secret. */
export async function hs256WithPublicKey(key: TestKey, payload: JWTPayload): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(key.publicPem));
}
