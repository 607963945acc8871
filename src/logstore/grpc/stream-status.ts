// Ending a server stream with an error status: grpc-js sends the status when the stream ends after an 'error'.
import type * as grpc from '@grpc/grpc-js';

/**
 * Fails a server-streaming call with `status` (its details, code and metadata reach the client at once). Not
 * `call.destroy(err)`: that sets the status and then ends a destroyed stream, which never sends it, so the client
 * waits for its deadline instead.
 */
export function failStream(
  call: grpc.ServerWritableStream<unknown, unknown>,
  status: Partial<grpc.StatusObject> & { details?: string },
): void {
  call.emit('error', Object.assign(new Error(status.details ?? 'failed'), status));
}
