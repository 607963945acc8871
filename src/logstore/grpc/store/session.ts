// A store's end of a Session (store.proto): one long-lived call from a proxy carrying Search, Fetch and Status
// requests tagged with ids; each answer (or error) goes back with its request's id as soon as it is ready.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { grpcError } from '../grpc-status.js';
import type { FetchRequest, FetchResponse, SearchRequest, SearchResponse, StatusResponse } from './messages.js';

/** What a store answers, whichever way it is asked (unary calls or a Session). */
export interface StoreOps {
  search(req: SearchRequest): Promise<SearchResponse>;
  fetch(req: FetchRequest): Promise<FetchResponse>;
  status(): Promise<StatusResponse>;
}

interface StoreCall {
  id: number;
  request?: 'search' | 'fetch' | 'status';
  search: SearchRequest | null;
  fetch: FetchRequest | null;
}
type StoreReply = { id: number } & (
  | { search: SearchResponse }
  | { fetch: FetchResponse }
  | { status: StatusResponse }
  | { error: { code: number; message: string } }
);

function answer(ops: StoreOps, c: StoreCall): Promise<Omit<StoreReply, 'id'>> {
  switch (c.request) {
    case 'search':
      return ops.search(c.search!).then((search) => ({ search }));
    case 'fetch':
      return ops.fetch(c.fetch!).then((fetch) => ({ fetch }));
    case 'status':
      return ops.status().then((status) => ({ status }));
    default:
      return Promise.resolve({
        error: { code: grpc.status.INVALID_ARGUMENT, message: 'a StoreCall must hold one of search, fetch or status' },
      });
  }
}

/**
 * The Session handler. Requests run concurrently and are answered in the order they finish. When the proxy
 * closes its side, the call ends once the requests in flight are answered; a cancelled call (the proxy went away)
 * drops the answers still to come.
 */
export function storeSession(ops: StoreOps, log: Logger): grpc.handleBidiStreamingCall<StoreCall, StoreReply> {
  return (call) => {
    let inflight = 0;
    let ended = false;
    const done = () => {
      if (--inflight === 0 && ended && !call.cancelled) call.end();
    };
    call.on('data', (c: StoreCall) => {
      inflight++;
      answer(ops, c).then(
        (r) => {
          if (!call.cancelled) call.write({ id: c.id, ...r } as StoreReply);
          done();
        },
        (err: unknown) => {
          const st = grpcError(err);
          if (st.code === grpc.status.INTERNAL) log.error({ err, request: c.request }, 'store session request failed');
          if (!call.cancelled)
            call.write({ id: c.id, error: { code: st.code ?? grpc.status.INTERNAL, message: st.details ?? '' } });
          done();
        },
      );
    });
    call.on('end', () => {
      ended = true;
      if (inflight === 0 && !call.cancelled) call.end();
    });
    call.on('error', (err) => log.debug({ err }, 'store session closed by an error'));
  };
}
