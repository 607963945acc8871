// The JavaScript relay (js-client.ts has the client side, js-server.ts the server side), the fallback when the native
// relay is off.
import net from 'node:net';
import type {
  ClientEnd,
  ClientEvents,
  ClientOptions,
  ClientRelaySocket,
  Relay,
  RelaySocket,
  ServerEnd,
  ServerEvents,
} from './relay.js';
import { JsClientEnd } from './js-client.js';
import { JsServerEnd } from './js-server.js';

/** Sockets stay Node sockets after login. Client bytes are followed by FrameStream and TransactionTracker and
 * written to the linked server as they come, server bytes to the client, and the pair is split after the server
 * read that holds the ReadyForQuery ending a transaction (as the native relay does). */
export class JsRelay implements Relay {
  /** Node sockets only: a client whose TLS the native relay terminates stays there. */
  adoptClient(conn: ClientRelaySocket, options: ClientOptions, events: ClientEvents): ClientEnd | null {
    const socket = conn.socket;
    if (!(socket instanceof net.Socket)) return null;
    return new JsClientEnd({ socket, read: conn.read }, options, events);
  }

  adoptServer(conn: RelaySocket, events: ServerEvents, rewrites = false): ServerEnd {
    return new JsServerEnd(conn, events, rewrites);
  }

  /** It never keeps a pair linked past its transaction. */
  reclaim(): void {}
}
