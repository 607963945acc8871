// Picks the relay for a pool (native.ts or js.ts): the one place that imports both implementations of the seam.
import type { Relay } from './relay.js';
import { NativeRelay } from './native.js';
import { JsRelay } from './js.js';

let chosen: Relay | null = null;
let javascript: Relay | null = null;

/** The process's relay: native when the addon is built and TIDEPOOL_NATIVE_RELAY is not 0, else JavaScript. */
export function currentRelay(): Relay {
  chosen ??= NativeRelay.get() ?? new JsRelay();
  return chosen;
}

function jsRelay(): Relay {
  const current = currentRelay();
  javascript ??= current instanceof JsRelay ? current : new JsRelay();
  return javascript;
}

/** The relay for a pool: one whose clients' statements are rewritten (prepared_statements in transaction mode)
 * needs the JavaScript relay, which carries the rewriter; the native relay forwards bytes it does not parse. `tls`:
 * the pool's servers (server_tls_sslmode) or clients may be Node TLS sockets, which only the JavaScript relay carries,
 * and a client and its server are always on one relay. Client TLS the native relay terminates itself needs no such
 * pool (tls-settings.ts tlsNeedsJsRelay). */
export function relayFor(rewrites: boolean, tls = false): Relay {
  if (tls) return jsRelay();
  if (!rewrites || process.env['TIDEPOOL_REWRITE_RELAY'] !== 'js') return currentRelay();
  return jsRelay();
}
