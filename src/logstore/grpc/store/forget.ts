// Forget (store.proto): leaves documents out of every later search, named by id or by the batch that stored them; a
// batch named before it arrived is refused when it does.
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { BadRequest } from '../../errors.js';
import type { Store } from '../../store.js';
import type { ForgetRequest } from './messages.js';
import { type RecentBatches, type RefusedBatches, batchKey } from './recent-batches.js';
import { unary } from './unary.js';

/** The ids of a ForgetRequest: 24 ASCII bytes each, 24 spaces skipped. */
function forgetIds(bytes: Buffer): string[] {
  if (bytes.length % 24 !== 0) throw new BadRequest(`ids must be 24 bytes each; got ${bytes.length} bytes`);
  const out: string[] = [];
  for (let at = 0; at < bytes.length; at += 24) {
    if (bytes[at] === 0x20) continue;
    const id = bytes.toString('latin1', at, at + 24);
    if (!/^[0-9a-f]{24}$/.test(id))
      throw new BadRequest(`not a document id (24 lowercase hex digits): ${JSON.stringify(id)}`);
    out.push(id);
  }
  return out;
}

export function forgetHandler(
  store: Store,
  log: Logger,
  recent: RecentBatches,
  refused: RefusedBatches,
): grpc.handleUnaryCall<ForgetRequest, { forgotten: number }> {
  return unary(log, async (req: ForgetRequest) => {
    const ids = forgetIds(req.ids);
    for (const b of req.batches ?? []) {
      const key = batchKey(b);
      const answer = recent.get(key);
      if (!answer) {
        refused.add(key);
        continue;
      }
      // Taken (perhaps still being stored): its ids once it is stored; a batch that failed stored nothing.
      const r = await answer.catch(() => null);
      if (r) ids.push(...forgetIds(r.ids));
    }
    return { forgotten: await store.forget(ids) };
  });
}
