// Status (store.proto): fractions, sizes and the fields seen per local shard, and the batches in flight; also what a
// Session's status requests run.
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { Store } from '../../store.js';
import type { StatusResponse } from './messages.js';
import { unary } from './unary.js';

export function statusOp(store: Store, inflight: { bulks: number }): () => Promise<StatusResponse> {
  return async () => ({ shards: await store.status(), inflight_bulks: inflight.bulks });
}

export function statusHandler(
  status: () => Promise<StatusResponse>,
  log: Logger,
): grpc.handleUnaryCall<unknown, StatusResponse> {
  return unary(log, status);
}
