// A unary call of the store API answered from a promise: the value, or the error as a gRPC status (logged when it is
// an internal one).
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { grpcError } from '../grpc-status.js';

export function unary<Req, Res>(log: Logger, fn: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, cb) => {
    fn(call.request).then(
      (res) => cb(null, res),
      (err: unknown) => {
        const st = grpcError(err);
        if (st.code === grpc.status.INTERNAL) log.error({ err, method: call.getPath() }, 'store call failed');
        cb(st);
      },
    );
  };
}
