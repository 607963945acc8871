// Starts the web listener on [web] host:port for a running pooler; the pooler process calls this when enabled.
import type { FastifyListenOptions } from 'fastify';
import type { PoolerControl } from '../control.js';
import { buildWebApp, WEB_TARGET, type WebAppOptions } from './app.js';

export interface WebListener {
  host: string;
  port: number;
  /** The listening descriptor (-1: none), for a takeover to pass to the next process. */
  readonly listeningFd: number;
  /** Stops accepting (this process's descriptor closes; requests under way finish); close() ends the rest. */
  stopAccepting(): void;
  close(): Promise<void>;
}

export interface StartWebOptions extends WebAppOptions {
  /** Overrides [web] host / port (tests pass port 0). */
  host?: string;
  port?: number;
  /** A listening socket a takeover received (takeover.ts): accepted on instead of opening host:port. */
  fd?: number;
}

export async function startWebListener(control: PoolerControl, opts: StartWebOptions = {}): Promise<WebListener> {
  const app = await buildWebApp(control, opts);
  const host = opts.host ?? control.config.web.host;
  const port = opts.port ?? control.config.web.port;
  try {
    // With an inherited socket Node ignores host and port; a host other than "localhost" keeps fastify from opening
    // a second address beside it.
    const inherited: FastifyListenOptions & { fd?: number } = {
      fd: opts.fd,
      host: host === 'localhost' ? '127.0.0.1' : host,
    };
    await app.listen(opts.fd !== undefined ? inherited : { host, port });
  } catch (err) {
    await app.close();
    throw err;
  }
  const addr = app.server.address();
  const bound = typeof addr === 'object' && addr ? { host: addr.address, port: addr.port } : { host, port };
  control.logs
    .get(WEB_TARGET)
    .info({ host: bound.host, port: bound.port, ui: control.config.web.ui }, 'web listener started');
  return {
    ...bound,
    get listeningFd() {
      const fd = (app.server as typeof app.server & { _handle?: { fd?: number } | null })._handle?.fd;
      return typeof fd === 'number' && fd >= 0 ? fd : -1;
    },
    stopAccepting() {
      if (app.server.listening) app.server.close();
    },
    async close() {
      await app.close();
    },
  };
}
