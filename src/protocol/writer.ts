// Serializers for the PostgreSQL messages the pooler writes: one small function per message.
import { BackendMessage, FrontendMessage, PROTOCOL_3_0, CANCEL_REQUEST } from './codes.js';

function message(type: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + body.length);
  out[0] = type;
  out.writeInt32BE(body.length + 4, 1);
  body.copy(out, 5);
  return out;
}

function cstr(s: string): Buffer {
  return Buffer.from(s + '\0', 'utf8');
}

function int32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(n, 0);
  return b;
}

export interface ErrorFields {
  severity?: 'ERROR' | 'FATAL' | 'PANIC' | 'WARNING' | 'NOTICE' | 'INFO' | 'LOG';
  code: string;
  message: string;
  detail?: string;
  hint?: string;
}

function noticeFields(f: ErrorFields): Buffer {
  const sev = f.severity ?? 'ERROR';
  const parts = [
    Buffer.from('S'),
    cstr(sev),
    Buffer.from('V'),
    cstr(sev),
    Buffer.from('C'),
    cstr(f.code),
    Buffer.from('M'),
    cstr(f.message),
  ];
  if (f.detail) parts.push(Buffer.from('D'), cstr(f.detail));
  if (f.hint) parts.push(Buffer.from('H'), cstr(f.hint));
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

export function writeErrorResponse(f: ErrorFields): Buffer {
  return message(BackendMessage.ErrorResponse, noticeFields(f));
}

export function writeNoticeResponse(f: ErrorFields): Buffer {
  return message(BackendMessage.NoticeResponse, noticeFields({ severity: 'NOTICE', ...f }));
}

export function writeAuthenticationOk(): Buffer {
  return message(BackendMessage.Authentication, int32(0));
}

export function writeAuthenticationCleartextPassword(): Buffer {
  return message(BackendMessage.Authentication, int32(3));
}

export function writeAuthenticationMD5Password(salt: Buffer): Buffer {
  return message(BackendMessage.Authentication, Buffer.concat([int32(5), salt]));
}

export function writeAuthenticationSASL(mechanisms: string[]): Buffer {
  return message(BackendMessage.Authentication, Buffer.concat([int32(10), ...mechanisms.map(cstr), Buffer.from([0])]));
}

export function writeAuthenticationSASLContinue(data: string): Buffer {
  return message(BackendMessage.Authentication, Buffer.concat([int32(11), Buffer.from(data, 'utf8')]));
}

export function writeAuthenticationSASLFinal(data: string): Buffer {
  return message(BackendMessage.Authentication, Buffer.concat([int32(12), Buffer.from(data, 'utf8')]));
}

export function writeParameterStatus(name: string, value: string): Buffer {
  return message(BackendMessage.ParameterStatus, Buffer.concat([cstr(name), cstr(value)]));
}

export function writeBackendKeyData(pid: number, secret: Buffer): Buffer {
  return message(BackendMessage.BackendKeyData, Buffer.concat([int32(pid), secret]));
}

export function writeReadyForQuery(status: number): Buffer {
  return message(BackendMessage.ReadyForQuery, Buffer.from([status]));
}

export function writeNegotiateProtocolVersion(newestMinor: number, unsupported: string[]): Buffer {
  return message(
    BackendMessage.NegotiateProtocolVersion,
    Buffer.concat([int32(newestMinor), int32(unsupported.length), ...unsupported.map(cstr)]),
  );
}

/** RowDescription with every column typed text (OID 25), format text. */
export function writeRowDescription(columns: readonly string[]): Buffer {
  const parts: Buffer[] = [Buffer.from([columns.length >> 8, columns.length & 0xff])];
  for (const c of columns) {
    const meta = Buffer.alloc(18);
    meta.writeInt32BE(0, 0); // table oid
    meta.writeInt16BE(0, 4); // column attnum
    meta.writeInt32BE(25, 6); // type oid: text
    meta.writeInt16BE(-1, 10); // type size
    meta.writeInt32BE(-1, 12); // type modifier
    meta.writeInt16BE(0, 16); // format: text
    parts.push(cstr(c), meta);
  }
  return message(BackendMessage.RowDescription, Buffer.concat(parts));
}

export function writeDataRow(values: readonly (string | null)[]): Buffer {
  const parts: Buffer[] = [Buffer.from([values.length >> 8, values.length & 0xff])];
  for (const v of values) {
    if (v === null) parts.push(int32(-1));
    else {
      const b = Buffer.from(v, 'utf8');
      parts.push(int32(b.length), b);
    }
  }
  return message(BackendMessage.DataRow, Buffer.concat(parts));
}

export function writeCommandComplete(tag: string): Buffer {
  return message(BackendMessage.CommandComplete, cstr(tag));
}

export function writeEmptyQueryResponse(): Buffer {
  return message(BackendMessage.EmptyQueryResponse, Buffer.alloc(0));
}

// Frontend messages (the pooler acting as a client of PostgreSQL).

export function writeStartupMessage(params: Record<string, string>): Buffer {
  const body = Buffer.concat([
    int32(PROTOCOL_3_0),
    ...Object.entries(params).flatMap(([k, v]) => [cstr(k), cstr(v)]),
    Buffer.from([0]),
  ]);
  return Buffer.concat([int32(body.length + 4), body]);
}

export function writePasswordMessage(password: string): Buffer {
  return message(FrontendMessage.Password, cstr(password));
}

export function writeSASLInitialResponse(mechanism: string, data: string): Buffer {
  const d = Buffer.from(data, 'utf8');
  return message(FrontendMessage.Password, Buffer.concat([cstr(mechanism), int32(d.length), d]));
}

export function writeSASLResponse(data: string): Buffer {
  return message(FrontendMessage.Password, Buffer.from(data, 'utf8'));
}

export function writeQuery(sql: string): Buffer {
  return message(FrontendMessage.Query, cstr(sql));
}

export function writeTerminate(): Buffer {
  return message(FrontendMessage.Terminate, Buffer.alloc(0));
}

export function writeCancelRequest(pid: number, secret: Buffer): Buffer {
  return Buffer.concat([int32(12 + secret.length), int32(CANCEL_REQUEST), int32(pid), secret]);
}
