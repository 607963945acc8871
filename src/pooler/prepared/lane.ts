// The native lane seen from the rewriter (native/relay-lane.h): the table of a client's statements that the linked server holds, as the addon reads it, and the messages it hands back.
import type { Statement } from './interner.js';

/** Table entries per link at most (the statements used last win); the rest go through the rewriter as before. */
export const LANE_MAX_ENTRIES = 128;

export interface LaneEntry {
  /** The client's name ('' is the unnamed statement: a Parse of its own text is answered by the addon). */
  name: string;
  statement: Statement;
}

/** u16 count; per entry u8 flags (1: a Parse body follows), client name NUL, server name NUL, and for the unnamed
 * statement a u32 length and the Parse body after its name (query NUL parameter types). */
export function encodeLaneTable(entries: readonly LaneEntry[]): Buffer {
  let size = 2;
  for (const { name, statement: s } of entries) {
    size += 1 + Buffer.byteLength(name) + 1 + s.name.length + 1;
    if (name === '') size += 4 + s.query.length + 1 + s.types.length;
  }
  const out = Buffer.allocUnsafe(size);
  let pos = out.writeUInt16BE(entries.length, 0);
  for (const { name, statement: s } of entries) {
    out[pos++] = name === '' ? 1 : 0;
    pos += out.write(name, pos, 'utf8');
    out[pos++] = 0;
    pos += out.write(s.name, pos, 'latin1');
    out[pos++] = 0;
    if (name !== '') continue;
    pos = out.writeUInt32BE(s.query.length + 1 + s.types.length, pos);
    pos += s.query.copy(out, pos);
    out[pos++] = 0;
    pos += s.types.copy(out, pos);
  }
  return out;
}

/** Whole messages (type, bytes) of a buffer the addon vouches holds only whole messages. */
export function wholeMessages(bytes: Buffer): [number, Buffer][] {
  const out: [number, Buffer][] = [];
  let pos = 0;
  while (pos + 5 <= bytes.length) {
    const end = pos + 1 + bytes.readUInt32BE(pos + 1);
    if (end > bytes.length) break;
    out.push([bytes[pos]!, bytes.subarray(pos, end)]);
    pos = end;
  }
  return out;
}
