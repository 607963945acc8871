// A bare PostgreSQL client for benchmarks that hold thousands of connections: one socket, an md5 (or trust) login,
// simple-protocol queries one at a time, nothing kept per connection but the socket and a small buffer.
import { createHash } from 'node:crypto';
import net from 'node:net';
import { writeQuery, writeStartupMessage, writeTerminate } from '../src/protocol/writer.js';

const md5 = (x: string | Buffer) => createHash('md5').update(x).digest('hex');

/** SQLSTATE and message of an ErrorResponse body. */
export function errorText(body: Buffer): string {
  let code = '';
  let msg = '';
  let i = 0;
  while (i < body.length && body[i] !== 0) {
    const t = String.fromCharCode(body[i]!);
    const end = body.indexOf(0, i + 1);
    const v = body.toString('utf8', i + 1, end);
    if (t === 'C') code = v;
    if (t === 'M') msg = v;
    i = end + 1;
  }
  return `${code} ${msg.slice(0, 80)}`;
}

export interface RawClient {
  /** Runs one simple query; resolves with its round trip in ms, rejects with the server's error. */
  query(sql: string): Promise<number>;
  /** Terminate and close. */
  end(): void;
}

/** Connects and logs in as `user` (md5 with `password`, or trust); rejects with the login's error. */
export function rawLogin(
  port: number,
  user: string,
  password: string,
  database: string,
  host = '127.0.0.1',
): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, host);
    s.setNoDelay(true);
    let buf: Buffer = Buffer.alloc(0);
    let pending: { resolve: (ms: number) => void; reject: (e: Error) => void; at: number; error: string } | null = null;
    let loggedIn = false;
    const fail = (e: Error) => {
      if (!loggedIn) reject(e);
      else if (pending) {
        const p = pending;
        pending = null;
        p.reject(e);
      }
    };
    const client: RawClient = {
      query(sql) {
        return new Promise((res, rej) => {
          pending = { resolve: res, reject: rej, at: performance.now(), error: '' };
          s.write(writeQuery(sql));
        });
      },
      end() {
        s.end(writeTerminate());
      },
    };
    s.on('connect', () => s.write(writeStartupMessage({ user, database })));
    s.on('error', (e) => fail(e));
    s.on('close', () => fail(new Error('connection closed')));
    s.on('data', (d: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      while (buf.length >= 5) {
        const len = buf.readInt32BE(1);
        if (buf.length < 1 + len) break;
        const type = buf[0]!;
        const body = buf.subarray(5, 1 + len);
        buf = buf.subarray(1 + len);
        if (type === 0x52 /* R */ && body.readInt32BE(0) === 5) {
          const hash = 'md5' + md5(Buffer.concat([Buffer.from(md5(password + user)), body.subarray(4, 8)]));
          const out = Buffer.alloc(6 + hash.length);
          out.write('p', 0);
          out.writeInt32BE(5 + hash.length, 1);
          out.write(hash, 5);
          s.write(out);
        } else if (type === 0x45 /* E */) {
          if (!loggedIn) return reject(new Error(errorText(body)));
          if (pending) pending.error = errorText(body);
        } else if (type === 0x5a /* Z */) {
          if (!loggedIn) {
            loggedIn = true;
            resolve(client);
          } else if (pending) {
            const p = pending;
            pending = null;
            if (p.error) p.reject(new Error(p.error));
            else p.resolve(performance.now() - p.at);
          }
        }
      }
    });
  });
}
