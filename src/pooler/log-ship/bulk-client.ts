// One connection's worth of bulk requests to a log store: POST <ship_to>/_bulk over node:http(s), with a deadline.
import http from 'node:http';
import https from 'node:https';

/** Largest bulk answer read; a store answering more for one batch is not behaving. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface BulkReply {
  status: number;
  body: string;
}

export interface BulkRequest {
  readonly done: Promise<BulkReply>;
  /** Ends the request now; `done` rejects with `reason`. */
  abort(reason: string): void;
}

/** A route of the log store at ship_to: its URL without credentials (a path prefix kept), the `user:password` of
 * ship_to's `user:password@` (Basic auth) and the address to log. */
export function shipTarget(
  shipTo: string,
  route: string,
): { endpoint: URL; auth: string | undefined; display: string } {
  const url = new URL(shipTo);
  const auth = url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined;
  url.username = '';
  url.password = '';
  const base = url.pathname.replace(/\/+$/, '');
  return { endpoint: new URL(`${base}/${route}`, url), auth, display: `${url.protocol}//${url.host}${base}` };
}

export class BulkClient {
  private readonly endpoint: URL;
  private readonly agent: http.Agent;
  private readonly auth: string | undefined;
  /** The address without credentials, for log lines. */
  readonly display: string;

  constructor(shipTo: string) {
    ({ endpoint: this.endpoint, auth: this.auth, display: this.display } = shipTarget(shipTo, '_bulk'));
    // One request at a time: a single kept-alive socket.
    const opts = { keepAlive: true, maxSockets: 1 };
    this.agent = this.endpoint.protocol === 'https:' ? new https.Agent(opts) : new http.Agent(opts);
  }

  post(body: Buffer, timeoutMs: number): BulkRequest {
    const mod = this.endpoint.protocol === 'https:' ? https : http;
    let abort: (reason: string) => void = () => undefined;
    const done = new Promise<BulkReply>((resolve, reject) => {
      const req = mod.request(
        this.endpoint,
        {
          method: 'POST',
          agent: this.agent,
          ...(this.auth === undefined ? {} : { auth: this.auth }),
          headers: { 'content-type': 'application/x-ndjson', 'content-length': body.length },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_ANSWER_BYTES) req.destroy(new Error(`bulk answer larger than ${MAX_ANSWER_BYTES} bytes`));
            else chunks.push(c);
          });
          res.on('end', () => {
            clearTimeout(timer);
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', (err) => {
            clearTimeout(timer);
            reject(err);
          });
          res.on('close', () => {
            clearTimeout(timer);
            if (!res.complete) reject(new Error('the connection closed before the answer ended'));
          });
        },
      );
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      timer.unref();
      abort = (reason) => req.destroy(new Error(reason));
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(body);
    });
    return { done, abort: (reason) => abort(reason) };
  }

  /** Closes the kept-alive socket. */
  close(): void {
    this.agent.destroy();
  }
}
