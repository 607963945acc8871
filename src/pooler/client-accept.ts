// How an accepted client connection becomes a ClientSession: from net.Server, or from the native relay's own accept.
import type net from 'node:net';
import { SqlState } from '../protocol/codes.js';
import { ClientSession } from './client-session.js';
import type { Pooler } from './pooler.js';
import { ReadBuffer, adoptWithOnread } from './read-buffer.js';
import type { NativeAcceptor, NativeLoginOk } from './relay/native.js';
import type { NativeTlsSocket } from './relay/native-tls.js';

/** TCP keepalive idle time of client connections. */
export const CLIENT_KEEPALIVE_MS = 60_000;
/** Read buffer per client socket: clients send small messages, and there can be many of them. */
const CLIENT_READ_BUFFER = 16 * 1024;

/** A connection net.Server accepted (paused): read straight into a ReadBuffer where the socket allows it. */
export function acceptSocket(p: Pooler, accepted: net.Socket): void {
  p.counters.connections++;
  if (p.shuttingDown) {
    accepted.destroy();
    return;
  }
  let session: ClientSession | null = null;
  p.loggingIn++;
  const socket = adoptWithOnread(accepted, new ReadBuffer(CLIENT_READ_BUFFER).onread(() => session!.handler));
  if (socket) {
    socket.setKeepAlive(true, CLIENT_KEEPALIVE_MS);
    session = new ClientSession(socket, p);
  } else {
    accepted.setKeepAlive(true, CLIENT_KEEPALIVE_MS);
    const s = new ClientSession(accepted, p);
    accepted.on('data', (chunk: Buffer) => s.handler(chunk));
    accepted.resume();
  }
}

function acceptNative(p: Pooler, socket: NativeTlsSocket, login: NativeLoginOk | null): void {
  p.counters.connections++;
  const pool = login ? p.nativeLogins.loggedIn(login, socket.id) : null;
  if (p.shuttingDown) {
    socket.destroy();
    return;
  }
  if (login && !pool) {
    // Greeted by the relay for a pool this pooler does not know: nothing can serve it.
    socket.destroy();
    return;
  }
  p.loggingIn++;
  if (login && pool) new ClientSession(socket, p, { pool, login });
  else new ClientSession(socket, p);
}

/** Clients the native relay accepted (NativeRelay.listen): their logins run on the addon's endpoint, in JavaScript
 * or, for the users of nativeLogins, in the relay itself. */
export function nativeAcceptor(p: Pooler): NativeAcceptor {
  return {
    accept: (socket, login) => acceptNative(p, socket, login),
    loginFailed: (address, port, entry, sqlstate, message) => {
      p.counters.connections++;
      p.counters.errors++;
      const pool = p.nativeLogins.pool(entry);
      if (sqlstate !== SqlState.ProtocolViolation) {
        p.log.info({ user: pool?.settings.user, database: pool?.settings.database, addr: `${address}:${port}` }, 'client authentication failed');
      }
      p.events.loginFailure(`client ${address}:${port}: ${message} (SQLSTATE ${sqlstate})`);
    },
    loginGone: () => { p.counters.connections++; },
  };
}
