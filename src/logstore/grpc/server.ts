// Binds the log store's gRPC listener (server.grpc_addr) with the services of the process's mode.
import * as grpc from '@grpc/grpc-js';
import { parseAddr } from '../../config/logstore.js';
import { serverOptions } from './proto.js';

export interface GrpcListener {
  addr: string;
  server: grpc.Server;
  close(): Promise<void>;
}

export async function startGrpc(addr: string, parts: [grpc.ServiceDefinition, grpc.UntypedServiceImplementation][], keepalive: { time: number; timeout: number }): Promise<GrpcListener> {
  const server = new grpc.Server(serverOptions(keepalive.time, keepalive.timeout));
  for (const [def, impl] of parts) server.addService(def, impl);
  const { host, port } = parseAddr(addr)!;
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return {
    addr: `${host}:${bound}`,
    server,
    close: () => new Promise<void>((resolve) => {
      // Calls in flight get a few seconds; then the rest are cut.
      const cut = setTimeout(() => server.forceShutdown(), 5000);
      server.tryShutdown(() => {
        clearTimeout(cut);
        resolve();
      });
    }),
  };
}
