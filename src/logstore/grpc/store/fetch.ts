// Fetch (store.proto): documents by id, streamed, with the damaged fractions that may hold a missing one in the
// trailer; also what a Session's fetch requests run.
import * as grpc from '@grpc/grpc-js';
import { hitData } from '../../api/operations.js';
import type { FieldsPipe } from '../../query/ast.js';
import type { Store } from '../../store.js';
import type { PbDoc } from '../convert.js';
import { grpcError } from '../grpc-status.js';
import { failStream } from '../stream-status.js';
import { DAMAGED_TRAILER, type FetchRequest, type FetchResponse } from './messages.js';

export function fetchOp(store: Store): (req: FetchRequest) => Promise<FetchResponse> {
  return async (req) => {
    const pipes: FieldsPipe[] = req.has_fields
      ? [{ kind: 'fields', except: req.fields_except, names: req.fields }]
      : [];
    const { hits, damaged } = await store.fetch(req.ids, pipes);
    return {
      docs: hits.map((h) => ({ id: h.id, data: Buffer.from(hitData(h)), time: h.time })),
      damaged_fractions: damaged ?? [],
    };
  };
}

export function fetchHandler(
  fetch: (req: FetchRequest) => Promise<FetchResponse>,
): grpc.handleServerStreamingCall<FetchRequest, PbDoc> {
  return (call) => {
    fetch(call.request).then(
      ({ docs, damaged_fractions }) => {
        for (const d of docs) call.write(d);
        const trailer = new grpc.Metadata();
        if (damaged_fractions.length) trailer.set(DAMAGED_TRAILER, damaged_fractions.join(','));
        call.end(trailer);
      },
      (err: unknown) => failStream(call, grpcError(err)),
    );
  };
}
