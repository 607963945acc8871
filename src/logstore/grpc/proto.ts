// Loads the log store's .proto files (proto/logstore/) once: the store API and the public search API.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { packageRoot } from '../../shared/package-root.js';

export const PROTO_DIR = path.join(packageRoot, 'proto', 'logstore');

// Field names as written in the .proto (snake_case, like the HTTP API); 64-bit numbers as JS numbers; enums
// as their names; unset fields filled with defaults, so handlers read plain values.
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  oneofs: true,
};

function load(file: string): grpc.GrpcObject {
  return grpc.loadPackageDefinition(protoLoader.loadSync(path.join(PROTO_DIR, file), LOADER_OPTIONS));
}

function at(root: grpc.GrpcObject, dotted: string): grpc.ServiceClientConstructor {
  let node: unknown = root;
  for (const part of dotted.split('.')) node = (node as Record<string, unknown>)[part];
  return node as grpc.ServiceClientConstructor;
}

let cached: { store: grpc.ServiceClientConstructor; api: grpc.ServiceClientConstructor } | null = null;

/** The service constructors (their `.service` is the definition a server adds). */
export function services(): { store: grpc.ServiceClientConstructor; api: grpc.ServiceClientConstructor } {
  cached ??= {
    store: at(load('store.proto'), 'tidepool.logstore.store.v1.StoreApi'),
    api: at(load('api.proto'), 'tidepool.logstore.api.v1.LogstoreApi'),
  };
  return cached;
}

/**
 * The HTTP/2 flow-control window (bytes) every log-store gRPC endpoint grants a peer, per connection and per
 * stream, instead of HTTP/2's 64 KiB: a proxy's batch (about 1 MiB) then goes out without the sender stopping for
 * a WINDOW_UPDATE every 32 KiB, which cost both processes wake-ups, small writes and allocations per batch.
 */
export const FLOW_WINDOW = 8 * 1024 * 1024;

/** Keepalive on both ends: a dead peer is noticed within keepalive_time + keepalive_timeout. */
export function keepaliveOptions(timeMs: number, timeoutMs: number): grpc.ChannelOptions {
  return {
    'grpc.keepalive_time_ms': timeMs,
    'grpc.keepalive_timeout_ms': timeoutMs,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.max_pings_without_data': 0,
    // A store that comes back is reached again within seconds (the default backoff grows to two minutes).
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 2000,
    'grpc.max_receive_message_length': 256 * 1024 * 1024,
    'grpc.max_send_message_length': 256 * 1024 * 1024,
    // A client's receive window (connection and streams); servers: see startGrpc.
    'grpc-node.flow_control_window': FLOW_WINDOW,
  };
}

/** Server side: accept the clients' pings (at most one per keepalive_time / 2) and ping idle clients too. */
export function serverOptions(timeMs: number, timeoutMs: number): grpc.ServerOptions {
  return {
    ...keepaliveOptions(timeMs, timeoutMs),
    'grpc.http2.min_ping_interval_without_data_ms': Math.max(1000, Math.floor(timeMs / 2)),
    'grpc.http2.min_time_between_pings_ms': Math.max(1000, Math.floor(timeMs / 2)),
  } as grpc.ServerOptions;
}
