// Extended-query messages the pooler rewrites (Parse, Bind, Describe, Close) and the replies it writes itself: whole messages in, values out, and back.
import { BackendMessage, FrontendMessage } from './codes.js';
import { ProtocolError } from './reader.js';

/** Parse: statement name, query text and the parameter-type block (int16 count + int32 OIDs), kept as bytes. */
export interface ParseMessage {
  name: string;
  query: Buffer;
  types: Buffer;
}

/** Bind: portal and statement names; `rest` is everything after the statement name (formats, values, result formats). */
export interface BindMessage {
  portal: string;
  statement: string;
  rest: Buffer;
}

/** Describe or Close: 'S' (statement) or 'P' (portal) and the name. */
export interface TargetMessage {
  kind: number;
  name: string;
}

const S = 0x53; // 'S'
const P = 0x50; // 'P'

/** Position just past the NUL that ends the string starting at `pos`, within [pos, end). */
function cstringEnd(buf: Buffer, pos: number, end: number): number {
  const nul = buf.indexOf(0, pos);
  if (nul < 0 || nul >= end) throw new ProtocolError('string not terminated');
  return nul + 1;
}

/** Length of a whole message (header included) after checking it against the buffer. */
function bodyEnd(msg: Buffer): number {
  if (msg.length < 5) throw new ProtocolError('message too short');
  const end = 1 + msg.readInt32BE(1);
  if (end !== msg.length) throw new ProtocolError('message length does not match its header');
  return end;
}

export function parseParse(msg: Buffer): ParseMessage {
  const end = bodyEnd(msg);
  const nameEnd = cstringEnd(msg, 5, end);
  const queryEnd = cstringEnd(msg, nameEnd, end);
  if (end - queryEnd < 2) throw new ProtocolError('message too short');
  const count = msg.readInt16BE(queryEnd);
  if (count < 0 || queryEnd + 2 + count * 4 !== end) throw new ProtocolError('invalid parameter type count');
  return {
    name: msg.toString('utf8', 5, nameEnd - 1),
    query: msg.subarray(nameEnd, queryEnd - 1),
    types: msg.subarray(queryEnd, end),
  };
}

export function parseBind(msg: Buffer): BindMessage {
  const end = bodyEnd(msg);
  const portalEnd = cstringEnd(msg, 5, end);
  const stmtEnd = cstringEnd(msg, portalEnd, end);
  return {
    portal: msg.toString('utf8', 5, portalEnd - 1),
    statement: msg.toString('utf8', portalEnd, stmtEnd - 1),
    rest: msg.subarray(stmtEnd, end),
  };
}

/** Describe and Close share one body: a kind byte and a name. */
export function parseTarget(msg: Buffer): TargetMessage {
  const end = bodyEnd(msg);
  if (end < 7) throw new ProtocolError('message too short');
  const kind = msg[5]!;
  if (kind !== S && kind !== P) throw new ProtocolError(`invalid target kind ${kind}`);
  const nameEnd = cstringEnd(msg, 6, end);
  if (nameEnd !== end) throw new ProtocolError('invalid message format');
  return { kind, name: msg.toString('utf8', 6, nameEnd - 1) };
}

function header(type: number, bodyLength: number): Buffer {
  const out = Buffer.allocUnsafe(5 + bodyLength);
  out[0] = type;
  out.writeInt32BE(bodyLength + 4, 1);
  return out;
}

export function writeParse(name: string, query: Buffer, types: Buffer): Buffer {
  const nameLen = Buffer.byteLength(name);
  const out = header(FrontendMessage.Parse, nameLen + 1 + query.length + 1 + types.length);
  let pos = 5 + out.write(name, 5);
  out[pos++] = 0;
  pos += query.copy(out, pos);
  out[pos++] = 0;
  types.copy(out, pos);
  return out;
}

export function writeBind(portal: string, statement: string, rest: Buffer): Buffer {
  const out = header(
    FrontendMessage.Bind,
    Buffer.byteLength(portal) + 1 + Buffer.byteLength(statement) + 1 + rest.length,
  );
  let pos = 5 + out.write(portal, 5);
  out[pos++] = 0;
  pos += out.write(statement, pos);
  out[pos++] = 0;
  rest.copy(out, pos);
  return out;
}

function writeTarget(type: number, kind: number, name: string): Buffer {
  const out = header(type, 1 + Buffer.byteLength(name) + 1);
  out[5] = kind;
  const pos = 6 + out.write(name, 6);
  out[pos] = 0;
  return out;
}

export function writeDescribe(kind: number, name: string): Buffer {
  return writeTarget(FrontendMessage.Describe, kind, name);
}

export function writeClose(kind: number, name: string): Buffer {
  return writeTarget(FrontendMessage.Close, kind, name);
}

const PARSE_COMPLETE = Buffer.from([BackendMessage.ParseComplete, 0, 0, 0, 4]);
const CLOSE_COMPLETE = Buffer.from([BackendMessage.CloseComplete, 0, 0, 0, 4]);

export function writeParseComplete(): Buffer {
  return PARSE_COMPLETE;
}

export function writeCloseComplete(): Buffer {
  return CLOSE_COMPLETE;
}

/** Field code -> value of an ErrorResponse or NoticeResponse, in wire order. */
export function parseErrorFields(msg: Buffer): Map<string, string> {
  const end = bodyEnd(msg);
  const fields = new Map<string, string>();
  let pos = 5;
  while (pos < end && msg[pos] !== 0) {
    const code = String.fromCharCode(msg[pos]!);
    const valueEnd = cstringEnd(msg, pos + 1, end);
    fields.set(code, msg.toString('utf8', pos + 1, valueEnd - 1));
    pos = valueEnd;
  }
  return fields;
}

/** An ErrorResponse (or NoticeResponse) from fields in the order given. */
export function writeErrorFields(type: number, fields: ReadonlyMap<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [code, value] of fields) parts.push(Buffer.from(code + value + '\0', 'utf8'));
  parts.push(Buffer.from([0]));
  const body = Buffer.concat(parts);
  const out = header(type, body.length);
  body.copy(out, 5);
  return out;
}

/** The tag of a CommandComplete ("SELECT 1", "DISCARD ALL"). */
export function parseCommandTag(msg: Buffer): string {
  const end = bodyEnd(msg);
  return msg.toString('utf8', 5, cstringEnd(msg, 5, end) - 1);
}
