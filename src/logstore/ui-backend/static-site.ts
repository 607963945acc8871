// The explorer's built bundle (ui/dist/explorer): hashed /assets/* cached for a year, index.html for every other GET.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { UiError } from './errors.js';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
};

/** An asset file name as Vite writes it: no directories, no dot-files, no `..`. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}$/;

const CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'";

const MISSING_BUNDLE = `<!doctype html><html><head><meta charset="utf-8"><title>tidepool explorer</title></head>
<body><h1>tidepool log explorer</h1><p>The explorer bundle is not built: run <code>npm run build</code>.</p></body></html>`;

export function registerExplorer(app: FastifyInstance, dir: string, log: Logger): void {
  const assetsDir = path.resolve(dir, 'assets');
  let shell: string | null = null;
  try {
    shell = readFileSync(path.join(dir, 'index.html'), 'utf8');
  } catch (err) {
    log.warn({ dir, error: (err as Error).message }, 'explorer bundle not found; serving a placeholder page');
  }
  const cache = new Map<string, Buffer>();
  app.get<{ Params: { '*': string } }>('/assets/*', async (req, reply) => {
    const name = req.params['*'];
    if (!ASSET_NAME.test(name)) throw new UiError('bad_request', 'invalid asset path');
    let body = cache.get(name);
    if (!body) {
      const file = path.join(assetsDir, name);
      try {
        if (!statSync(file).isFile()) throw new UiError('not_found', `no asset ${name}`);
        body = readFileSync(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new UiError('not_found', `no asset ${name}`);
        throw err;
      }
      cache.set(name, body);
    }
    return reply
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      .type(TYPES[path.extname(name)] ?? 'application/octet-stream')
      .send(body);
  });
  app.setNotFoundHandler((req, reply) => {
    const p = req.url.split('?')[0]!;
    if (
      p === '/api' ||
      p.startsWith('/api/') ||
      p.startsWith('/assets/') ||
      (req.method !== 'GET' && req.method !== 'HEAD')
    ) {
      const err = new UiError('not_found', `no endpoint ${req.method} ${p}`);
      return reply.code(err.status).send(err.body());
    }
    return reply
      .code(shell ? 200 : 503)
      .headers({
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'SAMEORIGIN',
        'content-security-policy': CSP,
      })
      .type('text/html; charset=utf-8')
      .send(shell ?? MISSING_BUNDLE);
  });
}
