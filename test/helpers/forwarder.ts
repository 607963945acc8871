// Test helper: a TCP forwarder to PostgreSQL (or anything) on loopback, that can hold each new connection a while
// before it forwards (a slow server connect) and can be put on a given port (a server appearing where none was).
import net from 'node:net';

export interface Forwarder {
  port: number;
  /** Closes the listener and every connection it forwards. */
  stop(): Promise<void>;
}

export async function startForwarder(
  target: { host: string; port: number },
  opts: { delayMs?: number; port?: number } = {},
): Promise<Forwarder> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('error', () => undefined);
    sock.on('close', () => sockets.delete(sock));
    sock.pause();
    const link = () => {
      if (sock.destroyed) return;
      const up = net.connect(target.port, target.host);
      sockets.add(up);
      up.on('error', () => sock.destroy());
      up.on('close', () => {
        sockets.delete(up);
        sock.destroy();
      });
      sock.on('close', () => up.destroy());
      sock.pipe(up);
      up.pipe(sock);
      sock.resume();
    };
    if (opts.delayMs) setTimeout(link, opts.delayMs);
    else link();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', resolve);
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
