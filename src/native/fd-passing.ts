// Descriptors passed between processes over a Unix socket (native/fd-passing.cc, SCM_RIGHTS). There is no TypeScript
// twin: Node passes descriptors only to its own children, so without the addon (TIDEPOOL_NATIVE=0, not built) this
// is null and the pooler's takeover is unavailable.
import { addon } from './index.js';

export interface FdPassing {
  /** A blocking socket connected to `path`, whose reads and writes give up after `timeoutMs` (code EAGAIN). */
  fdUnixConnect(path: string, timeoutMs: number): number;
  /** Sends `data` with `fds` attached (one sendmsg; throws unless every byte went). */
  fdSend(socket: number, data: Buffer, fds: number[]): number;
  /** One recvmsg: bytes (empty at end of stream) and the descriptors that came with them (close-on-exec). */
  fdReceive(socket: number): { data: Buffer; fds: number[] };
  /** The user id of the process at the other end of a Unix socket, -1 when unknown. */
  fdPeerUid(socket: number): number;
  fdClose(fd: number): void;
  /** One sendmsg on a non-blocking socket: the bytes that went (0 when its buffer is full), `fds` with the first. */
  fdSendSome(socket: number, data: Buffer, fds: number[]): number;
  /** fdReceive without waiting: undefined when nothing is there yet. */
  fdReceiveNow(socket: number): { data: Buffer; fds: number[] } | undefined;
  /** A close-on-exec duplicate of `fd`, the caller's to close. */
  fdDup(fd: number): number;
  /** Calls `callback` on the event loop whenever `fd` is readable or hung up, until fdUnwatch. */
  fdWatch(fd: number, callback: () => void): void;
  fdUnwatch(fd: number): void;
}

interface FdAddon extends Omit<FdPassing, 'fdReceiveNow' | 'fdReceive'> {
  fdReceive(socket: number, dontWait?: boolean): { data: Buffer; fds: number[] } | undefined;
}

function checked(a: FdAddon): FdPassing {
  const fd = (n: number, what: string) => {
    if (!Number.isInteger(n) || n < 0 || n > 0x7fffffff) throw new TypeError(`${what}: not a descriptor: ${n}`);
  };
  return {
    fdUnixConnect: (p, ms) => {
      if (typeof p !== 'string' || p.length === 0 || Buffer.byteLength(p) > 107) throw new RangeError(`takeover socket path empty or longer than 107 bytes: ${p}`);
      if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`fdUnixConnect: timeout must be > 0: ${ms}`);
      return a.fdUnixConnect(p, Math.ceil(ms));
    },
    fdSend: (s, data, fds) => {
      fd(s, 'fdSend');
      for (const f of fds) fd(f, 'fdSend');
      if (data.length === 0 || fds.length > 16) throw new RangeError('fdSend: data must not be empty, at most 16 descriptors');
      return a.fdSend(s, data, fds);
    },
    fdReceive: (s) => {
      fd(s, 'fdReceive');
      return a.fdReceive(s)!;
    },
    fdReceiveNow: (s) => {
      fd(s, 'fdReceive');
      return a.fdReceive(s, true);
    },
    fdSendSome: (s, data, fds) => {
      fd(s, 'fdSendSome');
      for (const f of fds) fd(f, 'fdSendSome');
      if (data.length === 0 || fds.length > 16) throw new RangeError('fdSendSome: data must not be empty, at most 16 descriptors');
      return a.fdSendSome(s, data, fds);
    },
    fdDup: (f) => {
      fd(f, 'fdDup');
      return a.fdDup(f);
    },
    fdWatch: (f, cb) => {
      fd(f, 'fdWatch');
      a.fdWatch(f, cb);
    },
    fdUnwatch: (f) => {
      fd(f, 'fdUnwatch');
      a.fdUnwatch(f);
    },
    fdPeerUid: (s) => {
      fd(s, 'fdPeerUid');
      return a.fdPeerUid(s);
    },
    fdClose: (f) => {
      fd(f, 'fdClose');
      a.fdClose(f);
    },
  };
}

/** The functions, or null when the addon is not loaded. */
export const fdPassing: FdPassing | null = addon && typeof addon.fdSend === 'function' ? checked(addon as unknown as FdAddon) : null;
