// Search (store.proto): a query over this store's fractions, its best `limit` documents, total, partial aggregations
// and histogram, for the proxy to merge; also what a Session's search requests run.
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { MappingSpec } from '../../mapping.js';
import { MAX_QUERY_DEPTH, QueryBudget } from '../../query/limits.js';
import { parseQuery } from '../../query/parser.js';
import { planQuery } from '../../query/plan.js';
import type { ShardQuery } from '../../search/execute.js';
import { HitList } from '../../search/packed-hits.js';
import { encodeHits } from '../../search/packed-wire.js';
import type { Store } from '../../store.js';
import { type PbDoc, aggFromPb, partialToPb } from '../convert.js';
import type { SearchRequest, SearchResponse } from './messages.js';
import { unary } from './unary.js';

/** The answer over the local store; its hits are the merged list itself (the caller encodes them). */
export function searchOp(store: Store, mapping: MappingSpec): (req: SearchRequest) => Promise<SearchResponse> {
  return async (req) => {
    // A proxy prints an Elasticsearch query it accepted as seq-ql, where one bool level may take up to three
    // levels (parentheses around and / or, a not): room for that, and still a limit.
    const parsed = parseQuery(req.query, new QueryBudget(4 * MAX_QUERY_DEPTH));
    const q: ShardQuery = {
      plan: planQuery(parsed, mapping),
      from: req.from,
      to: req.to,
      limit: req.limit,
      order: req.order === 'ASC' ? 'asc' : 'desc',
      aggs: req.aggs.map(aggFromPb),
      histInterval: req.hist_interval,
      pipes: parsed.pipes,
      withTotal: req.with_total,
      // The proxy's deadline; the store's own search.timeout applies too (Store takes the sooner).
      ...(req.timeout_ms ? { deadline: Date.now() + req.timeout_ms } : {}),
    };
    const r = await store.query(q);
    const docs: PbDoc[] = [];
    // A proxy that asks for packed hits gets one byte string; an older one a message per document.
    if (!req.packed_hits) for (let i = 0; i < r.hits.length; i++) docs.push(r.hits.doc(i));
    return {
      total: r.total,
      docs,
      hits: req.packed_hits ? r.hits : Buffer.alloc(0),
      aggs: r.aggs.map(partialToPb),
      hist: [...r.hist].map(([ts, count]) => ({ ts, count })),
      fractions_read: r.fractionsRead,
      timed_out: r.timedOut === true,
      damaged_fractions: r.damaged ?? [],
    };
  };
}

/** The unary Search: its answer's hits are encoded here; a Session's reply encoder writes them into the message itself. */
export function searchHandler(
  search: (req: SearchRequest) => Promise<SearchResponse>,
  log: Logger,
): grpc.handleUnaryCall<SearchRequest, SearchResponse> {
  return unary(log, async (req: SearchRequest) => {
    const r = await search(req);
    return r.hits instanceof HitList ? { ...r, hits: encodeHits(r.hits) } : r;
  });
}
