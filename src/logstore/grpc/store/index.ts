// The store API (store.proto) served over a local Store: what proxies call, in store mode and in single mode. One file
// per method (bulk.ts, search.ts, fetch.ts, status.ts, session.ts, forget.ts); this one builds the service from them.
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { BulkBudget } from '../../ingest/bulk-budget.js';
import type { MappingSpec } from '../../mapping.js';
import type { Store } from '../../store.js';
import { services } from '../proto.js';
import { bulkHandler } from './bulk.js';
import { fetchHandler, fetchOp } from './fetch.js';
import { forgetHandler } from './forget.js';
import { RecentBatches, RefusedBatches } from './recent-batches.js';
import { searchHandler, searchOp } from './search.js';
import { type StoreOps, storeSession } from './session.js';
import { storeReplySerializer } from './session-reply.js';
import { statusHandler, statusOp } from './status.js';

/** Search, Fetch and Status over the local store: what the unary calls and a Session's requests run. */
export function storeOps(store: Store, mapping: MappingSpec, inflight: { bulks: number }): StoreOps {
  return { search: searchOp(store, mapping), fetch: fetchOp(store), status: statusOp(store, inflight) };
}

/**
 * The service's handlers. `budget`: limits.bulk_memory, shared with the HTTP API in single mode (Bulk refuses a batch
 * that does not fit); the batches remembered are shared by Bulk and Forget.
 */
export function storeHandlers(
  store: Store,
  mapping: MappingSpec,
  log: Logger,
  inflight: { bulks: number },
  budget: BulkBudget,
): grpc.UntypedServiceImplementation {
  const recent = new RecentBatches();
  const refused = new RefusedBatches();
  const ops = storeOps(store, mapping, inflight);
  return {
    Bulk: bulkHandler(store, log, inflight, budget, recent, refused),
    Search: searchHandler(ops.search, log),
    Fetch: fetchHandler(ops.fetch),
    Status: statusHandler(ops.status, log),
    Session: storeSession(ops, log),
    Forget: forgetHandler(store, log, recent, refused),
  };
}

/** The store service's definition with the Session's replies serialized by storeReplySerializer(). */
export function storeServiceDefinition(): grpc.ServiceDefinition {
  const svc = services().store.service;
  return { ...svc, Session: { ...svc.Session!, responseSerialize: storeReplySerializer() } };
}
