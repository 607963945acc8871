// Parsers for the PostgreSQL messages the pooler must understand: bytes in, values out.
import { CANCEL_REQUEST, GSSENC_REQUEST, SSL_REQUEST } from './codes.js';

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** Reads NUL-terminated strings and integers from one message body. */
export class BodyReader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }
  int32(): number {
    if (this.pos + 4 > this.end) throw new ProtocolError('message too short');
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  int16(): number {
    if (this.pos + 2 > this.end) throw new ProtocolError('message too short');
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  cstring(): string {
    const nul = this.buf.indexOf(0, this.pos);
    if (nul < 0 || nul >= this.end) throw new ProtocolError('string not terminated');
    const s = this.buf.toString('utf8', this.pos, nul);
    this.pos = nul + 1;
    return s;
  }
  bytes(n: number): Buffer {
    if (n < 0 || this.pos + n > this.end) throw new ProtocolError('message too short');
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  rest(): Buffer {
    const b = this.buf.subarray(this.pos, this.end);
    this.pos = this.end;
    return b;
  }
  get remaining(): number {
    return this.end - this.pos;
  }
}

export type StartupPacket =
  | { kind: 'ssl' }
  | { kind: 'gssenc' }
  | { kind: 'cancel'; pid: number; secret: Buffer }
  | { kind: 'startup'; major: number; minor: number; params: Map<string, string> };

/** Parses a startup-phase packet (length included in `buf`, no type byte). */
export function parseStartupPacket(buf: Buffer): StartupPacket {
  const r = new BodyReader(buf, 4);
  const code = r.int32();
  if (code === SSL_REQUEST) return { kind: 'ssl' };
  if (code === GSSENC_REQUEST) return { kind: 'gssenc' };
  if (code === CANCEL_REQUEST) {
    const pid = r.int32();
    return { kind: 'cancel', pid, secret: Buffer.from(r.rest()) };
  }
  const major = code >>> 16;
  const minor = code & 0xffff;
  if (major !== 3)
    throw new ProtocolError(`unsupported frontend protocol ${major}.${minor}: server supports 3.0 to 3.2`);
  const params = new Map<string, string>();
  for (;;) {
    if (r.remaining === 0) throw new ProtocolError('startup packet not terminated');
    const key = r.cstring();
    if (key === '') break;
    params.set(key, r.cstring());
  }
  return { kind: 'startup', major, minor, params };
}

/** ErrorResponse / NoticeResponse body -> field map keyed by the one-letter codes. */
export function parseErrorFields(body: Buffer): Map<string, string> {
  const fields = new Map<string, string>();
  const r = new BodyReader(body);
  while (r.remaining > 0) {
    const code = body[r.pos]!;
    r.pos++;
    if (code === 0) break;
    fields.set(String.fromCharCode(code), r.cstring());
  }
  return fields;
}

const FIELD_SEVERITY = 0x53; // S: localized
const FIELD_SEVERITY_V = 0x56; // V: never localized (PostgreSQL 9.6+)
const FIELD_CODE = 0x43; // C: SQLSTATE

/** Whether the ErrorResponse at buf[start] (header included, `len` its length field) ends the session: severity FATAL
 * or PANIC, after which PostgreSQL closes the connection. Reads V, which lc_messages does not translate, else S. */
export function endsSession(buf: Buffer, start: number, len: number): boolean {
  const end = Math.min(buf.length, start + 1 + len);
  let severity = '';
  for (let pos = start + 5; pos < end && buf[pos] !== 0;) {
    const code = buf[pos]!;
    const nul = buf.indexOf(0, pos + 1);
    if (nul < 0 || nul >= end) break;
    if (code === FIELD_SEVERITY_V) {
      severity = buf.toString('latin1', pos + 1, nul);
      break;
    }
    if (code === FIELD_SEVERITY) severity = buf.toString('latin1', pos + 1, nul);
    pos = nul + 1;
  }
  return severity === 'FATAL' || severity === 'PANIC';
}

/** The SQLSTATE (field C) of the ErrorResponse at `start` (type byte; `len` its length field), or null when absent. */
export function sqlStateOf(buf: Buffer, start: number, len: number): string | null {
  const end = Math.min(buf.length, start + 1 + len);
  for (let pos = start + 5; pos < end && buf[pos] !== 0;) {
    const nul = buf.indexOf(0, pos + 1);
    if (nul < 0 || nul >= end) return null;
    if (buf[pos] === FIELD_CODE) return buf.toString('latin1', pos + 1, nul);
    pos = nul + 1;
  }
  return null;
}

/** Query message body -> SQL text. */
export function parseQuery(body: Buffer): string {
  return new BodyReader(body).cstring();
}

/** SASLInitialResponse body -> mechanism and client-first-message. */
export function parseSASLInitialResponse(body: Buffer): { mechanism: string; data: string } {
  const r = new BodyReader(body);
  const mechanism = r.cstring();
  const len = r.int32();
  const data = len < 0 ? '' : r.bytes(len).toString('utf8');
  return { mechanism, data };
}

/** PasswordMessage body -> password. */
export function parsePasswordMessage(body: Buffer): string {
  return new BodyReader(body).cstring();
}
