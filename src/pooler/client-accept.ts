// How an accepted client connection becomes a ClientSession: from net.Server, or from the native relay's own accept.
import type net from 'node:net';
import { SqlState } from '../protocol/codes.js';
import { writeErrorResponse } from '../protocol/writer.js';
import { ClientSession } from './client-session.js';
import type { Pooler } from './pooler.js';
import { ReadBuffer, adoptWithOnread } from './read-buffer.js';
import type { NativeAcceptor, NativeLoginOk } from './relay/native.js';
import { NativeTlsSocket } from './relay/native-tls.js';

/** TCP keepalive idle time of client connections. */
export const CLIENT_KEEPALIVE_MS = 60_000;
/** Read buffer per client socket: clients send small messages, and there can be many of them. */
const CLIENT_READ_BUFFER = 16 * 1024;

/** max_connections counts logins in progress: the client past it gets PostgreSQL's 53300 at once, and its socket
 * goes once the error is sent (a client that never reads or closes keeps no descriptor). True when refused. */
function refuseIfFull(p: Pooler, socket: net.Socket | NativeTlsSocket): boolean {
  const max = p.config.general.max_connections;
  if (p.connectionCount() < max) return false;
  p.counters.errors++;
  p.counters.refusedMaxConnections++;
  p.limitedLogs.maxConnections.add(1, { max_connections: max, addr: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}` });
  const error = writeErrorResponse({ severity: 'FATAL', code: SqlState.TooManyConnections, message: `sorry, too many clients already (max_connections = ${max})` });
  if (socket instanceof NativeTlsSocket) {
    socket.end(error);
  } else {
    socket.write(error);
    socket.destroySoon();
  }
  return true;
}

/** A connection net.Server accepted (paused): read straight into a ReadBuffer where the socket allows it. */
export function acceptSocket(p: Pooler, accepted: net.Socket): void {
  p.counters.connections++;
  if (p.shuttingDown) {
    accepted.destroy();
    return;
  }
  if (p.clientSocketCap > 0 && p.connectionCount() >= p.clientSocketCap) {
    p.counters.refusedDescriptors++;
    p.limitedLogs.descriptors.add(1, { client_sockets: p.clientSocketCap });
    accepted.destroy();
    return;
  }
  if (refuseIfFull(p, accepted)) return;
  let session: ClientSession | null = null;
  p.loginCountChanged(1);
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
  if (!login && refuseIfFull(p, socket)) return;
  p.loginCountChanged(1);
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
      if (sqlstate === SqlState.TooManyConnections) {
        p.counters.refusedMaxConnections++;
        p.limitedLogs.maxConnections.add(1, { max_connections: p.config.general.max_connections, addr: `${address}:${port}` });
        return;
      }
      // A warning, as PostgreSQL and PgBouncer log it: security monitoring watches failed logins.
      if (sqlstate !== SqlState.ProtocolViolation) {
        p.log.warn({ user: pool?.settings.user, database: pool?.settings.database, addr: `${address}:${port}` }, 'client authentication failed');
      }
      p.events.loginFailure(`client ${address}:${port}: ${message} (SQLSTATE ${sqlstate})`);
    },
    loginGone: () => { p.counters.connections++; },
  };
}
