// Socket reads into a reused buffer (net's onread) instead of a fresh Buffer per read through the stream
// layer; a handler returns true when it keeps a reference to the chunk, and the buffer is then replaced.
// Each socket needs a buffer of its own: a socket keeps the buffer it was handed until its next read, so a
// buffer shared between sockets could be overwritten under a chunk that is still queued for writing.
import net from 'node:net';

/** A chunk handler: returns true when `chunk` is still referenced after it returns. */
export type ChunkHandler = (chunk: Buffer) => boolean;

export class ReadBuffer {
  private buf: Buffer;
  readonly take = (): Buffer => this.buf;

  constructor(private readonly size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** onread options that pass each chunk to `handler` (looked up per read, so it can change). */
  onread(handler: () => ChunkHandler): { buffer: () => Buffer; callback: (n: number, buf: Uint8Array) => boolean } {
    return {
      buffer: this.take,
      callback: (n, buf) => {
        if (handler()(Buffer.from(buf.buffer, buf.byteOffset, n))) this.buf = Buffer.allocUnsafe(this.size);
        return true;
      },
    };
  }
}

/** Read buffer per client socket: clients send small messages, and there can be many of them. */
export const CLIENT_READ_BUFFER = 16 * 1024;

type WithHandle = net.Socket & { _handle?: unknown };

/** A connected TCP socket made from a descriptor (a client a takeover moved: takeover-clients.ts), paused until
 * resume() so nothing is read before a relay has it (the native relay takes the descriptor unread), its reads then
 * through a ReadBuffer of `size` bytes into `handler()`. Throws when `fd` is not a socket. */
export function socketFromFd(fd: number, size: number, handler: () => ChunkHandler): net.Socket {
  return new net.Socket({
    fd,
    readable: true,
    writable: true,
    pauseOnCreate: true,
    onread: new ReadBuffer(size).onread(handler),
  } as net.SocketConstructorOpts & { pauseOnCreate: boolean; onread: unknown });
}

/**
 * Re-wraps a socket accepted by net.Server (created with pauseOnConnect) so its reads go through onread;
 * net.Server has no onread option of its own. Returns null when this Node version's socket does not
 * expose its handle, and the caller keeps the 'data' path.
 */
export function adoptWithOnread(accepted: net.Socket, onread: ReturnType<ReadBuffer['onread']>): net.Socket | null {
  const raw = accepted as WithHandle;
  const handle = raw._handle;
  if (!handle || typeof handle !== 'object') return null;
  raw._handle = null;
  accepted.destroy();
  // TCP_NODELAY, set by net.Server's noDelay option, belongs to the file descriptor and stays.
  return new net.Socket({ handle, onread, readable: true, writable: true } as net.SocketConstructorOpts & {
    handle: unknown;
    onread: unknown;
  });
}
