// The console bundle: hashed /assets/* with an immutable cache header, index.html for every other non-API path.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { sendError } from '../errors.js';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** An asset file name as Vite writes it: no directories, no dot-files, no `..`. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}$/;

export const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Headers on the SPA shell; no-referrer keeps a `?token=` out of Referer headers. */
const SHELL_HEADERS = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'SAMEORIGIN',
  'referrer-policy': 'no-referrer',
};

/** CSP of the shell; the SSO proxy's origin is allowed as a frame source for the silent-refresh frame. */
export function shellCsp(ssoProxyUrl: string | null): string {
  // A relative or malformed proxy URL adds nothing: relative URLs are same-origin already.
  const frame = ssoProxyUrl && URL.canParse(ssoProxyUrl) ? `'self' ${new URL(ssoProxyUrl).origin}` : "'self'";
  return `default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-src ${frame}; frame-ancestors 'self'; base-uri 'none'; form-action 'self'`;
}

const MISSING_BUNDLE = `<!doctype html><html><head><meta charset="utf-8"><title>tidepool</title></head>
<body><h1>tidepool console</h1><p>The console bundle is not built: run <code>npm run build</code>.</p></body></html>`;

export interface StaticSite {
  /** Sends index.html; `ssoProxyUrl` is the usable SSO proxy, if any. */
  sendShell(reply: FastifyReply, ssoProxyUrl: string | null): FastifyReply;
}

export function registerStaticRoutes(app: FastifyInstance, staticDir: string, log: Logger): StaticSite {
  const assetsDir = path.resolve(staticDir, 'assets');
  let shell: string | null = null;
  try {
    shell = readFileSync(path.join(staticDir, 'index.html'), 'utf8');
  } catch (err) {
    log.warn({ dir: staticDir, error: (err as Error).message }, 'console bundle not found; serving a placeholder page');
  }
  const cache = new Map<string, Buffer>();

  app.get<{ Params: { '*': string } }>('/assets/*', { config: { access: 'none' } }, async (req, reply) => {
    const name = req.params['*'];
    if (!ASSET_NAME.test(name) || name.includes('..')) return sendError(reply, 'bad_request', 'invalid asset path');
    let body = cache.get(name);
    if (!body) {
      const file = path.join(assetsDir, name);
      if (path.dirname(file) !== assetsDir) return sendError(reply, 'bad_request', 'invalid asset path');
      try {
        if (!statSync(file).isFile()) return sendError(reply, 'not_found', `no asset ${name}`);
        body = readFileSync(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return sendError(reply, 'not_found', `no asset ${name}`);
        throw err;
      }
      cache.set(name, body);
    }
    return reply
      .header('cache-control', IMMUTABLE)
      .header('x-content-type-options', 'nosniff')
      .type(TYPES[path.extname(name)] ?? 'application/octet-stream')
      .send(body);
  });

  return {
    sendShell(reply, ssoProxyUrl) {
      return reply
        .headers({ ...SHELL_HEADERS, 'content-security-policy': shellCsp(ssoProxyUrl) })
        .type('text/html; charset=utf-8')
        .code(shell ? 200 : 503)
        .send(shell ?? MISSING_BUNDLE);
    },
  };
}
