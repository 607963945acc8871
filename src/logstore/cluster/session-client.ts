// A proxy's end of a store Session (store.proto): one long-lived bidirectional call per store carrying Search,
// Fetch and Status requests by id, so a request costs one message each way instead of a whole gRPC call. Each
// request keeps its own deadline here (cluster.request_timeout); a call that breaks fails the requests it carried
// and the next request opens a new one.
import * as grpc from '@grpc/grpc-js';
import { services } from '../grpc/proto.js';

export type SessionKind = 'search' | 'fetch' | 'status';

interface Waiter {
  call: grpc.ClientDuplexStream<unknown, Reply>;
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

interface Reply {
  id: number;
  reply?: SessionKind | 'error';
  search?: unknown;
  fetch?: unknown;
  status?: unknown;
  error?: { code: number; message: string } | null;
}

/** An error shaped like grpc-js's own (code, details), so callers treat a session's failures as a unary call's. */
export function sessionError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), {
    code,
    details,
    metadata: new grpc.Metadata(),
  });
}

export class SessionClient {
  private call: grpc.ClientDuplexStream<unknown, Reply> | null = null;
  private readonly waiting = new Map<number, Waiter>();
  private nextId = 0;
  /** The store answered the Session call UNIMPLEMENTED (a store from before sessions): use unary calls. */
  unsupported = false;

  constructor(
    private readonly client: grpc.Client,
    private readonly timeoutMs: number,
  ) {}

  /** Requests in flight (tests and metrics). */
  get pending(): number {
    return this.waiting.size;
  }

  /** Sends one request; resolves with the store's answer, or rejects with its error, a broken call, or the deadline. */
  request<T>(kind: SessionKind, body: unknown): Promise<T> {
    const call = this.open();
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    const id = this.nextId;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(
          sessionError(
            grpc.status.DEADLINE_EXCEEDED,
            `Deadline exceeded: the store did not answer in ${this.timeoutMs} ms`,
          ),
        );
      }, this.timeoutMs);
      this.waiting.set(id, { call, resolve: resolve as (v: unknown) => void, reject, timer });
      try {
        call.write({ id, [kind]: body });
      } catch (err) {
        this.broken(call, err as Error);
      }
    });
  }

  private open(): grpc.ClientDuplexStream<unknown, Reply> {
    if (this.call) return this.call;
    const def = services().store.service.Session!;
    // No deadline on the call itself: it lives as long as the connection; each request has its own.
    const call = this.client.makeBidiStreamRequest(
      def.path,
      def.requestSerialize as (v: unknown) => Buffer,
      def.responseDeserialize as (b: Buffer) => Reply,
      new grpc.Metadata(),
      {},
    );
    call.on('data', (r: Reply) => this.answered(r));
    call.on('error', (err: grpc.ServiceError) => this.broken(call, err));
    // The store ended its side (it is shutting down): what is still waiting will not be answered on this call.
    call.on('end', () => this.broken(call, sessionError(grpc.status.UNAVAILABLE, 'the store closed the session')));
    this.call = call;
    return call;
  }

  private answered(r: Reply): void {
    const w = this.waiting.get(r.id);
    // An answer after its deadline: the request failed already.
    if (!w) return;
    this.waiting.delete(r.id);
    clearTimeout(w.timer);
    if (r.reply === 'error') w.reject(sessionError(r.error!.code, r.error!.message));
    else if (r.reply === undefined)
      w.reject(sessionError(grpc.status.INTERNAL, 'the store answered with an empty StoreReply'));
    else w.resolve(r[r.reply]);
  }

  /** Fails every request `call` carried; the next request opens a new call. */
  private broken(call: grpc.ClientDuplexStream<unknown, Reply>, err: Error): void {
    if (this.call === call) {
      this.call = null;
      call.cancel();
    }
    if ((err as grpc.ServiceError).code === grpc.status.UNIMPLEMENTED) this.unsupported = true;
    for (const [id, w] of this.waiting) {
      if (w.call !== call) continue;
      this.waiting.delete(id);
      clearTimeout(w.timer);
      w.reject(err);
    }
  }

  close(): void {
    const call = this.call;
    if (call) this.broken(call, sessionError(grpc.status.CANCELLED, 'the proxy closed the session'));
  }
}
