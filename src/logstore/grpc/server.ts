// Binds the log store's gRPC listener (server.grpc_addr) with the services of the process's mode.
import type { Http2Session, Settings } from 'node:http2';
import type { Server as NetServer } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { parseAddr } from '../../config/logstore.js';
import { FLOW_WINDOW, serverOptions } from './proto.js';

/** What of @grpc/grpc-js's Server the receive window is set through (it takes no option for a server's window). */
interface ServerInternals {
  commonServerOptions?: { settings?: Settings };
  http2Servers?: Map<NetServer, unknown>;
}

/** Every stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE of the HTTP/2 servers bindAsync creates). */
function widenStreamWindow(server: grpc.Server): boolean {
  const inner = server as unknown as ServerInternals;
  if (!inner.commonServerOptions) return false;
  inner.commonServerOptions.settings = { ...inner.commonServerOptions.settings, initialWindowSize: FLOW_WINDOW };
  return true;
}

/** Every connection's receive window (a WINDOW_UPDATE once the session starts); false when it cannot be reached. */
function widenConnectionWindow(server: grpc.Server): boolean {
  const servers = (server as unknown as ServerInternals).http2Servers;
  if (!(servers instanceof Map) || servers.size === 0) return false;
  for (const h of servers.keys()) h.on('session', (s: Http2Session) => s.setLocalWindowSize(FLOW_WINDOW));
  return true;
}

export interface GrpcListener {
  addr: string;
  server: grpc.Server;
  /** False when this @grpc/grpc-js no longer lets the receive windows be widened (HTTP/2's 64 KiB then). */
  windows: boolean;
  close(): Promise<void>;
}

export async function startGrpc(
  addr: string,
  parts: [grpc.ServiceDefinition, grpc.UntypedServiceImplementation][],
  keepalive: { time: number; timeout: number },
): Promise<GrpcListener> {
  const server = new grpc.Server(serverOptions(keepalive.time, keepalive.timeout));
  for (const [def, impl] of parts) server.addService(def, impl);
  const streams = widenStreamWindow(server);
  const { host, port } = parseAddr(addr)!;
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${host.includes(':') ? `[${host}]` : host}:${port}`,
      grpc.ServerCredentials.createInsecure(),
      (err, p) => (err ? reject(err) : resolve(p)),
    );
  });
  const windows = streams && widenConnectionWindow(server);
  return {
    addr: `${host}:${bound}`,
    server,
    windows,
    close: () =>
      new Promise<void>((resolve) => {
        // Calls in flight get a few seconds; then the rest are cut.
        const cut = setTimeout(() => server.forceShutdown(), 5000);
        server.tryShutdown(() => {
          clearTimeout(cut);
          resolve();
        });
      }),
  };
}
