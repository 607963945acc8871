// The JavaScript side of native/relay.cc: after login, client and server sockets are handed to the addon,
// which forwards bytes on the event loop by itself and reports only transaction boundaries and closes.
// Events arrive in one batch per loop iteration through a shared Int32Array (five slots per event).
// TIDEPOOL_NATIVE=0 (no addon) or TIDEPOOL_NATIVE_RELAY=0 keeps every socket on the JavaScript relay.
import type net from 'node:net';
import { addon } from '../../native/index.js';
import { DURATION_BOUNDS, STATS_LAYOUT } from '../stats.js';

interface RelayAddon {
  relayInit(onEvents: (count: number) => void, events: Int32Array, layout: Int32Array, bounds: Float64Array): boolean;
  relayAddClient(fd: number, stats: Float64Array, maxMessage: number, initial?: Uint8Array): number;
  relayAddServer(fd: number, maxMessage: number): number;
  relayLink(client: number, server: number, transactionMode: boolean): boolean;
  relayUnlink(client: number): number;
  relayWrite(id: number, data: Uint8Array): boolean;
  relayClose(id: number): void;
  relayDestroy(id: number): void;
  relayWatchReady(server: number): boolean;
  relayInfo(id: number, out: Float64Array): boolean;
  relayReclaim(stats: Float64Array, out: Int32Array): number;
}

const enum RelayEvent {
  NeedServer = 1,
  Release = 2,
  ClientClosed = 3,
  ServerClosed = 4,
  ServerReady = 5,
  BadLength = 6,
}

/** What a client session does with the relay's reports. */
export interface RelayClientOwner {
  onNativeNeedServer(): void;
  onNativeRelease(): void;
  /** reason: 0 EOF, 1 Terminate, 2 socket error; `clean` when its linked server is between transactions. */
  onNativeClosed(reason: number, clean: boolean): void;
  onNativeBadLength(length: number): void;
}

/** Parking: in transaction mode, while a pool has nobody waiting (and is not paused or draining), the
 * relay keeps a pair linked after its transaction instead of splitting it, so a client that comes back
 * before anyone else needs the server costs no JavaScript at all. JavaScript still owns every decision:
 * whenever it needs the pool's real state (a waiter, PAUSE, RECONNECT, maintenance, SHOW) it reclaims
 * the parked servers first, as if each had been released at its ReadyForQuery. */

export interface RelayServerOwner {
  /** reason: 0 EOF, 1 socket error, 2 malformed message; `parked` when its client was between transactions. */
  onNativeClosed(atBoundary: boolean, reason: number, parked: boolean): void;
  onNativeReady(sawError: boolean): void;
}

/** Per-socket numbers the relay keeps (SHOW CLIENTS, SHOW SERVERS, graceful shutdown). */
export interface RelayInfo {
  transactions: number;
  queries: number;
  errors: number;
  bytesSent: number;
  bytesReceived: number;
  txStatus: number;
  syncs: number;
  unsynced: boolean;
  pendingOut: number;
  peer: number;
}

type WithHandle = net.Socket & { _handle?: { fd?: number } | null };

/** The descriptor under a connected socket, or -1 when this platform or Node does not expose it. */
export function socketFd(socket: net.Socket): number {
  const fd = (socket as WithHandle)._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
}

/** Closes Node's socket object after the relay took a duplicate of its descriptor: the connection stays open. */
function dropNodeSocket(socket: net.Socket): void {
  socket.removeAllListeners();
  socket.on('error', () => undefined);
  socket.destroy();
}

export class NativeRelay {
  private static instance: NativeRelay | null | undefined;
  private readonly clients = new Map<number, RelayClientOwner>();
  private readonly servers = new Map<number, RelayServerOwner>();
  private readonly events = new Int32Array(5 * 2048);
  private readonly infoOut = new Float64Array(10);
  private readonly reclaimOut = new Int32Array(4096);

  private constructor(private readonly a: RelayAddon) {
    const layout = Int32Array.from([STATS_LAYOUT.qHist, STATS_LAYOUT.xHist, STATS_LAYOUT.qRing, STATS_LAYOUT.xRing, STATS_LAYOUT.ringSize, STATS_LAYOUT.parkable]);
    a.relayInit(this.onEvents, this.events, layout, Float64Array.from(DURATION_BOUNDS));
  }

  /** The process's relay, or null when the addon is missing or the relay is turned off. */
  static get(): NativeRelay | null {
    if (NativeRelay.instance !== undefined) return NativeRelay.instance;
    const a = addon as unknown as Partial<RelayAddon> | null;
    const off = process.env.TIDEPOOL_NATIVE_RELAY === '0' || process.platform === 'win32';
    NativeRelay.instance = !off && a && typeof a.relayInit === 'function' ? new NativeRelay(a as RelayAddon) : null;
    return NativeRelay.instance;
  }

  /** Takes over a logged-in client socket; `initial` holds bytes JavaScript already read. Returns the id, or 0. */
  adoptClient(socket: net.Socket, stats: Float64Array, maxMessage: number, initial: Buffer | null, owner: RelayClientOwner): number {
    const fd = socketFd(socket);
    if (fd < 0 || socket.writableLength > 0) return 0;
    const id = this.a.relayAddClient(fd, stats, maxMessage, initial && initial.length ? initial : undefined);
    this.clients.set(id, owner);
    dropNodeSocket(socket);
    return id;
  }

  adoptServer(socket: net.Socket, owner: RelayServerOwner): number {
    const fd = socketFd(socket);
    if (fd < 0 || socket.writableLength > 0) return 0;
    const id = this.a.relayAddServer(fd, 0x7fffffff);
    this.servers.set(id, owner);
    dropNodeSocket(socket);
    return id;
  }

  link(client: number, server: number, transactionMode: boolean): boolean {
    return this.a.relayLink(client, server, transactionMode);
  }

  /** Splits a pair: 1 when the server is between transactions, 0 when not, -1 when it was not linked. */
  unlink(client: number): number {
    return this.a.relayUnlink(client);
  }

  write(id: number, data: Uint8Array): boolean {
    return this.a.relayWrite(id, data);
  }

  /** Sends what is pending, shuts down writes and discards reads until EOF; forced after `graceMs`. */
  close(id: number, graceMs: number): void {
    this.clients.delete(id);
    this.servers.delete(id);
    this.a.relayClose(id);
    setTimeout(() => this.a.relayDestroy(id), graceMs).unref();
  }

  destroy(id: number): void {
    this.clients.delete(id);
    this.servers.delete(id);
    this.a.relayDestroy(id);
  }

  /** Reports the server's next ReadyForQuery (SERVER_READY) while it is not linked (reset query). */
  watchReady(server: number): boolean {
    return this.a.relayWatchReady(server);
  }

  /** Splits every parked pair of the pool counting into `stats`; each client is told as at a release. */
  reclaim(stats: Float64Array): void {
    for (;;) {
      const n = this.a.relayReclaim(stats, this.reclaimOut);
      if (n === 0) return;
      const ids = this.reclaimOut.slice(0, n);
      for (const id of ids) this.clients.get(id)?.onNativeRelease();
      if (n < this.reclaimOut.length) return;
    }
  }

  info(id: number): RelayInfo | null {
    const o = this.infoOut;
    if (!this.a.relayInfo(id, o)) return null;
    return {
      transactions: o[0]!, queries: o[1]!, errors: o[2]!, bytesSent: o[3]!, bytesReceived: o[4]!,
      txStatus: o[5]!, syncs: o[6]!, unsynced: o[7] === 1, pendingOut: o[8]!, peer: o[9]!,
    };
  }

  private readonly onEvents = (count: number): void => {
    // Read in place: events raised while this runs wait in the addon for the next call.
    const batch = this.events;
    const end = count * 5;
    for (let i = 0; i < end; i += 5) {
      const kind = batch[i]!;
      const id = batch[i + 1]!;
      try {
        switch (kind) {
          case RelayEvent.NeedServer:
            this.clients.get(id)?.onNativeNeedServer();
            break;
          case RelayEvent.Release:
            this.clients.get(id)?.onNativeRelease();
            break;
          case RelayEvent.ClientClosed: {
            const c = this.clients.get(id);
            this.clients.delete(id);
            c?.onNativeClosed(batch[i + 2]!, batch[i + 4] === 1);
            break;
          }
          case RelayEvent.ServerClosed: {
            const s = this.servers.get(id);
            this.servers.delete(id);
            s?.onNativeClosed(batch[i + 3] === 1, batch[i + 4]!, batch[i + 3] === 2);
            break;
          }
          case RelayEvent.ServerReady:
            this.servers.get(id)?.onNativeReady(batch[i + 2] === 1);
            break;
          case RelayEvent.BadLength:
            this.clients.get(id)?.onNativeBadLength(batch[i + 2]!);
            break;
          default:
            break;
        }
      } catch (err) {
        // One session's bug must not drop the other events of the batch.
        process.emitWarning(`native relay event ${kind} for ${id}: ${(err as Error).stack ?? String(err)}`);
      }
    }
  };
}
