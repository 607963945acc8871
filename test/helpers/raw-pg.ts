// Test helper: a protocol-level PostgreSQL client built from the project's own writer, for exact message sequences (pgjdbc's and psycopg's patterns, pipelines, errors).
import { createHash } from 'node:crypto';
import net from 'node:net';
import { writeParse, writeBind, writeDescribe, writeClose } from '../../src/protocol/extended.js';
import { writeQuery, writeStartupMessage } from '../../src/protocol/writer.js';

export interface Message {
  type: string;
  /** The whole message, header included. */
  raw: Buffer;
}

const md5 = (s: string | Buffer) => createHash('md5').update(s).digest('hex');

/** A connection that reads whole messages in order. */
export class RawConnection {
  private buf: Buffer = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  private closed = false;
  /** Backend pid from BackendKeyData. */
  pid = 0;
  /** ParameterStatus values told at login. */
  readonly told = new Map<string, string>();

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      this.waiting?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiting?.();
    });
    socket.on('error', () => undefined);
  }

  static async connect(opts: {
    host: string;
    port: number;
    user: string;
    database: string;
    password?: string;
    params?: Record<string, string>;
  }): Promise<RawConnection> {
    const socket = net.connect(opts.port, opts.host);
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return RawConnection.login(socket, opts);
  }

  /** Logs in over a socket already connected (a TLS socket, for direct TLS). */
  static async login(
    socket: net.Socket,
    opts: { user: string; database: string; password?: string; params?: Record<string, string> },
  ): Promise<RawConnection> {
    const c = new RawConnection(socket);
    socket.write(writeStartupMessage({ user: opts.user, database: opts.database, ...opts.params }));
    for (;;) {
      const m = await c.read();
      if (m.type === 'R') {
        const code = m.raw.readInt32BE(5);
        if (code === 5) {
          const salt = m.raw.subarray(9, 13);
          const hash = 'md5' + md5(Buffer.concat([Buffer.from(md5((opts.password ?? '') + opts.user)), salt]));
          socket.write(Buffer.concat([Buffer.from('p'), int32(hash.length + 5), Buffer.from(hash + '\0')]));
        } else if (code !== 0) throw new Error(`authentication method ${code} not supported by the raw test client`);
      } else if (m.type === 'K') c.pid = m.raw.readInt32BE(5);
      else if (m.type === 'S') {
        const nameEnd = m.raw.indexOf(0, 5);
        c.told.set(m.raw.toString('utf8', 5, nameEnd), m.raw.toString('utf8', nameEnd + 1, m.raw.length - 1));
      } else if (m.type === 'E') throw new Error(`login failed: ${errorText(m)}`);
      else if (m.type === 'Z') return c;
    }
  }

  send(...messages: Buffer[]): void {
    this.socket.write(messages.length === 1 ? messages[0]! : Buffer.concat(messages));
  }

  async read(timeoutMs = 10_000): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.buf.length >= 5) {
        const len = this.buf.readInt32BE(1);
        if (this.buf.length >= 1 + len) {
          const raw = this.buf.subarray(0, 1 + len);
          this.buf = this.buf.subarray(1 + len);
          return { type: String.fromCharCode(raw[0]!), raw };
        }
      }
      if (this.closed) throw new Error('connection closed');
      if (Date.now() > deadline) throw new Error(`no message within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, deadline - Date.now());
        this.waiting = () => {
          clearTimeout(t);
          this.waiting = null;
          resolve();
        };
      });
    }
  }

  /** Reads messages through the `count`-th ReadyForQuery. */
  async readUntilReady(count = 1): Promise<Message[]> {
    const out: Message[] = [];
    while (count > 0) {
      const m = await this.read();
      out.push(m);
      if (m.type === 'Z') count--;
    }
    return out;
  }

  /** Every message until the peer closes the connection, and how many bytes came after the last whole one (0 when
   * nothing but whole messages came). */
  async rest(timeoutMs = 10_000): Promise<{ messages: Message[]; trailing: number }> {
    const messages: Message[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        messages.push(await this.read(Math.max(1, deadline - Date.now())));
      } catch (err) {
        if (!this.closed) throw err;
        return { messages, trailing: this.buf.length };
      }
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

/** "SQLSTATE message" of an ErrorResponse. */
export function errorText(m: Message): string {
  const fields = new Map<string, string>();
  let pos = 5;
  while (pos < m.raw.length && m.raw[pos] !== 0) {
    const end = m.raw.indexOf(0, pos + 1);
    fields.set(String.fromCharCode(m.raw[pos]!), m.raw.toString('utf8', pos + 1, end));
    pos = end + 1;
  }
  return `${fields.get('C')} ${fields.get('M')}`;
}

/** Readable form of a reply, for comparing sequences: type letter, plus what tells replies apart. */
export function describeMessage(m: Message): string {
  switch (m.type) {
    case 'E':
      return `E ${errorText(m)}`;
    case 'C':
      return `C ${m.raw.toString('utf8', 5, m.raw.length - 1)}`;
    case 'Z':
      return `Z ${String.fromCharCode(m.raw[5]!)}`;
    case 'D':
      return `D ${m.raw.subarray(5).toString('hex')}`;
    default:
      return m.type;
  }
}

/** Client messages for scripts: Parse, Bind (text parameters), Describe, Execute, Close, Sync, Flush, Query. */
export const msg = {
  parse: (name: string, sql: string, types: number[] = []) => {
    const t = Buffer.alloc(2 + 4 * types.length);
    t.writeInt16BE(types.length);
    types.forEach((oid, i) => t.writeInt32BE(oid, 2 + 4 * i));
    return writeParse(name, Buffer.from(sql), t);
  },
  bind: (statement: string, params: (string | null)[] = [], portal = '') => {
    const parts = [int16(0), int16(params.length)];
    for (const p of params) {
      if (p === null) parts.push(int32(-1));
      else parts.push(int32(Buffer.byteLength(p)), Buffer.from(p));
    }
    parts.push(int16(0));
    return writeBind(portal, statement, Buffer.concat(parts));
  },
  describeStatement: (name: string) => writeDescribe(0x53, name),
  describePortal: (name = '') => writeDescribe(0x50, name),
  execute: (portal = '', maxRows = 0) => {
    const body = Buffer.concat([Buffer.from(portal + '\0'), int32(maxRows)]);
    return Buffer.concat([Buffer.from('E'), int32(body.length + 4), body]);
  },
  closeStatement: (name: string) => writeClose(0x53, name),
  sync: () => Buffer.from([0x53, 0, 0, 0, 4]),
  flush: () => Buffer.from([0x48, 0, 0, 0, 4]),
  query: (sql: string) => writeQuery(sql),
};

function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}
