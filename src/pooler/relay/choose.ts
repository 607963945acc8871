// Picks the relay for a pool (native.ts or js.ts): the one place that imports both implementations of the seam.
import type { Relay, RelayKind } from './relay.js';
import { NativeRelay } from './native.js';
import { JsRelay } from './js.js';

let javascript: JsRelay | null = null;

/** The relay for a pool: the process's native relay when `kind` is native and a pooler made it (NativeRelay.start),
 * else the JavaScript relay. pool-settings.ts picks the kind from [native] and TLS; a client and its server are always
 * on one relay. */
export function relayFor(kind: RelayKind): Relay {
  if (kind === 'native') {
    const native = NativeRelay.get();
    if (native) return native;
  }
  javascript ??= new JsRelay();
  return javascript;
}
