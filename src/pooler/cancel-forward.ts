// A CancelRequest sent to PostgreSQL on a connection of its own, as the protocol asks.
import net from 'node:net';
import { writeCancelRequest } from '../protocol/writer.js';

/**
 * Connects to `target`, sends the CancelRequest for (pid, secret) and waits for PostgreSQL to close the connection
 * (it has signalled the backend by then); one that hangs is given up after `timeoutMs`. `onError` hears why the
 * connection failed; `onClosed` runs once, in every case.
 */
export function sendCancelRequest(
  target: { host: string; port: number },
  pid: number,
  secret: Buffer,
  timeoutMs: number,
  onError: (message: string) => void,
  onClosed: () => void,
): void {
  const sock = net.connect({ host: target.host, port: target.port }, () => sock.end(writeCancelRequest(pid, secret)));
  sock.setTimeout(timeoutMs, () => sock.destroy(new Error('timed out')));
  sock.on('error', (err) => onError(err.message));
  sock.once('close', onClosed);
}
