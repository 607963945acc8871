// A bare PostgreSQL client for benchmarks that hold thousands of connections: one socket, an md5 (or trust) login,
// simple-protocol queries one at a time, nothing kept per connection but the socket and a small buffer.
import net from 'node:net';
import { md5Inner, md5Response } from '../src/pooler/auth/md5.js';
import { ScramClient } from '../src/pooler/auth/scram.js';
import { parseErrorFields } from '../src/protocol/reader.js';
import {
  writePasswordMessage,
  writeQuery,
  writeSASLInitialResponse,
  writeSASLResponse,
  writeStartupMessage,
  writeTerminate,
} from '../src/protocol/writer.js';

/** SQLSTATE and message of an ErrorResponse body. */
export function errorText(body: Buffer): string {
  const f = parseErrorFields(body);
  return `${f.get('C') ?? ''} ${(f.get('M') ?? '').slice(0, 80)}`;
}

/** The PasswordMessage answering an AuthenticationMD5Password request whose body is `body`. */
export function md5Answer(body: Buffer, user: string, password: string): Buffer {
  return writePasswordMessage(md5Response(md5Inner(password, user), body.subarray(4, 8)));
}

/** A benchmark's `--name value` option, or `dflt`. */
export function benchOpt(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

export interface RawClient {
  /** Runs one simple query; resolves with its round trip in ms, rejects with the server's error. */
  query(sql: string): Promise<number>;
  /** Sends protocol messages as given (e.g. Bind, Execute, Sync) and resolves at the next ReadyForQuery, as query. */
  exec(messages: Buffer): Promise<number>;
  /** Terminate and close. */
  end(): void;
}

/** Connects and logs in as `user` (md5 or SCRAM-SHA-256 with `password`, or trust); rejects with the login's error.
 * SCRAM derives the password's keys once per salt in this process (keysFromPassword), so a client logging in again
 * and again costs the pooler a login without costing itself PBKDF2 each time. */
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
    let scram: ScramClient | null = null;
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
        return client.exec(writeQuery(sql));
      },
      exec(messages) {
        return new Promise((res, rej) => {
          if (s.destroyed) return rej(new Error('connection closed'));
          pending = { resolve: res, reject: rej, at: performance.now(), error: '' };
          s.write(messages);
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
        const code = type === 0x52 /* R */ ? body.readInt32BE(0) : -1;
        if (code === 5) {
          s.write(md5Answer(body, user, password));
        } else if (code === 10) {
          scram = new ScramClient({ password });
          s.write(writeSASLInitialResponse('SCRAM-SHA-256', scram.first()));
        } else if ((code === 11 || code === 12) && scram) {
          try {
            if (code === 11) s.write(writeSASLResponse(scram.final(body.subarray(4).toString('utf8'))));
            else scram.verify(body.subarray(4).toString('utf8'));
          } catch (e) {
            s.destroy();
            return reject(e as Error);
          }
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
