// The public gRPC Fetch's partial-response trailer: a metadata value HTTP/2 carries (printable ASCII, no spaces at
// either end), whatever text the failed stores' errors hold.
import type { IncomingHttpHeaders } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { partialTrailer } from '../../../src/logstore/grpc/api-service.js';

describe('partialTrailer', () => {
  it('flags the answer partial and carries the message as printable ASCII, trimmed', () => {
    const m = partialTrailer({
      failedShards: 1,
      shards: 2,
      message: '1 of 2 shards did not answer: shard 1: héllo\nnote: ',
    });
    expect(m.get('x-partial-response')).toEqual(['true']);
    expect(m.get('x-partial-message')).toEqual(['1 of 2 shards did not answer: shard 1: h?llo?note:']);
    // What grpc-js itself accepts as a metadata value (and would throw on otherwise).
    expect(() => grpc.Metadata.fromHttp2Headers(m.toHttp2Headers() as IncomingHttpHeaders)).not.toThrow();
    expect(grpc.Metadata.fromHttp2Headers(m.toHttp2Headers() as IncomingHttpHeaders).get('x-partial-message')).toEqual(
      m.get('x-partial-message'),
    );
  });
});
