// Starts the web listener on [web] host:port for a running pooler; the pooler process calls this when enabled.
import type { PoolerControl } from '../control.js';
import { buildWebApp, WEB_TARGET, type WebAppOptions } from './app.js';

export interface WebListener {
  host: string;
  port: number;
  close(): Promise<void>;
}

export interface StartWebOptions extends WebAppOptions {
  /** Overrides [web] host / port (tests pass port 0). */
  host?: string;
  port?: number;
}

export async function startWebListener(control: PoolerControl, opts: StartWebOptions = {}): Promise<WebListener> {
  const app = await buildWebApp(control, opts);
  const host = opts.host ?? control.config.web.host;
  const port = opts.port ?? control.config.web.port;
  try {
    await app.listen({ host, port });
  } catch (err) {
    await app.close();
    throw err;
  }
  const addr = app.server.address();
  const bound = typeof addr === 'object' && addr ? { host: addr.address, port: addr.port } : { host, port };
  control.logs.get(WEB_TARGET).info({ host: bound.host, port: bound.port, ui: control.config.web.ui }, 'web listener started');
  return {
    ...bound,
    async close() {
      await app.close();
    },
  };
}
