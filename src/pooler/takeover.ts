// A restart without a refused connection (issue 38, first step): the running pooler process hands its listening
// sockets to a new `tidepool pooler --takeover` over a Unix socket (SCM_RIGHTS, native/fd-passing.cc), the new one
// accepts on them, and the old one stops accepting and shuts down as on SIGTERM. The kernel socket never closes: it
// stays open while either process holds a descriptor of it, and clients queued on it go to whichever accepts first.
//
// The exchange, one JSON line each way: the new process sends {"takeover":1,"pid"}; the old one answers
// {"pid","listeners":[{name,host,port,bound}]} with one descriptor per listener attached, or {"error"}; the new one
// listens on them and sends {"ready":true}, or closes the connection (the old one then keeps serving as before).
// After the ready the connection stays open: the old process moves its clients over it (takeover-clients.ts).
// The answer carries the old process's counters too ("stats"), and the old process sends them again, on the new
// one's takeover socket, until it exits: {"stats":1,"pid","carry"}, answered {"ok":true} (takeover-stats.ts).
import { existsSync, chmodSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { PoolerConfig } from '../config/pooler.js';
import { fdPassing, type FdPassing } from '../native/fd-passing.js';

/** How long the new process waits for the old one's answer (the old one answers from its event loop at once). */
export const TAKEOVER_TIMEOUT_MS = 10_000;
/** How long the old process waits for the new one to listen before it keeps serving on its own. */
const READY_TIMEOUT_MS = 60_000;
/** Longest request line the old process reads (a counters line from a predecessor: a few KB per pool). */
const MAX_LINE = 16 * 1024 * 1024;

/** A listening socket as passed: what it was configured with (host, port) and the port it is bound to. */
export interface PassedListener {
  name: 'pooler' | 'web';
  host: string;
  port: number;
  bound: number;
}

/** A received listener: its description and this process's descriptor of it. */
export interface InheritedListener extends PassedListener {
  fd: number;
}

/** A takeover refused or failed before the new process listened: the old one serves on. */
export class TakeoverError extends Error {}

/** The takeover socket's path: general.takeover_socket, or .tidepool-<port>.takeover beside the config file. */
export function takeoverSocketPath(config: PoolerConfig, configFile: string): string {
  const set = config.general.takeover_socket;
  if (set) return path.resolve(set);
  return path.join(path.dirname(path.resolve(configFile)), `.tidepool-${config.general.port}.takeover`);
}

function needFdPassing(): FdPassing {
  if (!fdPassing)
    throw new TakeoverError(
      'takeover needs the native addon (built, and TIDEPOOL_NATIVE is not 0): Node cannot pass descriptors between processes',
    );
  return fdPassing;
}

/** The new process's side: the old one's listeners, received and not yet listened on. */
export class Handoff {
  private closed = false;

  private constructor(
    private readonly f: FdPassing,
    private readonly socket: number,
    readonly oldPid: number,
    readonly listeners: InheritedListener[],
    /** The old process's counters at the answer (takeover-stats.ts CarriedStats), or undefined. */
    readonly stats: unknown,
  ) {}

  /** Connects to the running pooler at `socketPath` and receives its listening sockets (blocking, up to timeoutMs). */
  static receive(socketPath: string, timeoutMs = TAKEOVER_TIMEOUT_MS): Handoff {
    const f = needFdPassing();
    let socket: number;
    try {
      socket = f.fdUnixConnect(socketPath, timeoutMs);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOENT' || code === 'ECONNREFUSED' ? 'no pooler process answers there' : (err as Error).message;
      throw new TakeoverError(`takeover: cannot connect to ${socketPath}: ${why}`);
    }
    const fds: number[] = [];
    try {
      f.fdSend(socket, Buffer.from(`${JSON.stringify({ takeover: 1, pid: process.pid })}\n`), []);
      let text = '';
      while (!text.includes('\n')) {
        const got = f.fdReceive(socket);
        fds.push(...got.fds);
        if (got.data.length === 0)
          throw new TakeoverError('takeover: the running pooler closed the connection without an answer');
        text += got.data.toString('utf8');
        if (text.length > MAX_LINE) throw new TakeoverError('takeover: answer too long');
      }
      const answer = JSON.parse(text.slice(0, text.indexOf('\n'))) as {
        error?: string;
        pid?: number;
        listeners?: PassedListener[];
        stats?: unknown;
      };
      if (answer.error) throw new TakeoverError(`takeover refused by the running pooler: ${answer.error}`);
      const listed = answer.listeners ?? [];
      if (listed.length !== fds.length || typeof answer.pid !== 'number') {
        throw new TakeoverError(`takeover: ${fds.length} descriptors came for ${listed.length} listeners`);
      }
      return new Handoff(
        f,
        socket,
        answer.pid,
        listed.map((l, i) => ({ ...l, fd: fds[i]! })),
        answer.stats,
      );
    } catch (err) {
      for (const fd of fds) f.fdClose(fd);
      f.fdClose(socket);
      if (err instanceof TakeoverError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      throw new TakeoverError(
        `takeover: ${code === 'EAGAIN' ? `no answer within ${timeoutMs} ms` : (err as Error).message}`,
      );
    }
  }

  listener(name: PassedListener['name']): InheritedListener | null {
    return this.listeners.find((l) => l.name === name) ?? null;
  }

  /** This process listens on what it took: the old one stops accepting and shuts down. Descriptors not used are
   * closed here (a listener this config no longer has: it closes with the old process). Returns the connection's
   * descriptor, over which the old process moves its clients next (takeover-clients.ts ClientReceiver), or -1 when
   * the ready could not be sent. */
  ready(used: readonly number[]): number {
    if (this.closed) return -1;
    this.closed = true;
    for (const l of this.listeners) if (!used.includes(l.fd)) this.f.fdClose(l.fd);
    try {
      // With the ready, in the same send: this process takes server connections too (takeover-servers.ts), unless
      // TIDEPOOL_TAKEOVER_SERVERS=0 (it then opens its own, and the old process closes its servers as it ends).
      // And it takes a client linked to its server (session mode, pinned) as a pair (takeover-clients.ts), unless
      // TIDEPOOL_TAKEOVER_PAIRS=0 (such clients then finish on the old process, as before pairs moved).
      const servers =
        (takesServers() ? `${JSON.stringify({ servers: 1 })}\n` : '') +
        (takesPairs() ? `${JSON.stringify({ pairs: 1 })}\n` : '');
      this.f.fdSend(this.socket, Buffer.from(`${JSON.stringify({ ready: true })}\n${servers}`), []);
    } catch (err) {
      this.f.fdClose(this.socket);
      throw err;
    }
    return this.socket;
  }

  /** This process will not serve: every descriptor it received is closed, and the old process serves on. */
  abort(): void {
    if (this.closed) return;
    this.closed = true;
    for (const l of this.listeners) this.f.fdClose(l.fd);
    this.f.fdClose(this.socket);
  }
}

/** What the running process offers a successor. */
export interface TakeoverSource {
  /** The listeners to pass with their descriptors in this process; null: nothing to pass (shutting down). */
  listeners(): { passed: PassedListener; fd: number }[] | null;
  /** The successor listens: stop accepting and shut down as on SIGTERM, moving the clients over `channel` (the
   * connection to the successor, its descriptor, and what it sent after its ready). */
  handedOver(successorPid: number, channel: { socket: net.Socket; fd: number; rest: string }): void;
  /** This process's counters, sent with the listeners (takeover-stats.ts). */
  stats?(): unknown;
  /** Counters from the process `pid` (this one's predecessor, finishing its clients): true when taken. */
  carried?(pid: number, stats: unknown): boolean;
}

/** The running process's side: a Unix socket at `socketPath` that answers one takeover at a time. */
export class TakeoverServer {
  private server: net.Server | null = null;
  private busy = false;
  private done = false;

  constructor(
    private readonly socketPath: string,
    private readonly source: TakeoverSource,
    private readonly log: Logger,
  ) {}

  /** Listens at the path (a socket file no process answers on is replaced); false, with a warn line, when it cannot:
   * the pooler serves on without takeover. */
  async open(): Promise<boolean> {
    if (!fdPassing) {
      this.log.warn({ socket: this.socketPath }, 'takeover unavailable: the native addon is not loaded');
      return false;
    }
    try {
      await this.listenAt();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || (await answers(this.socketPath))) {
        this.log.warn(
          { socket: this.socketPath, err: (err as Error).message },
          'takeover unavailable: cannot listen on the takeover socket',
        );
        return false;
      }
      try {
        unlinkSync(this.socketPath);
        await this.listenAt();
      } catch (again) {
        this.log.warn(
          { socket: this.socketPath, err: (again as Error).message },
          'takeover unavailable: cannot listen on the takeover socket',
        );
        return false;
      }
    }
    return true;
  }

  private listenAt(): Promise<void> {
    const server = net.createServer((socket) => this.serve(socket));
    return new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.socketPath, () => {
        server.removeListener('error', reject);
        server.on('error', (err) => this.log.error({ err: err.message }, 'takeover socket error'));
        // Only this user may connect; the peer's user id is checked as well (fdPeerUid).
        chmodSync(this.socketPath, 0o600);
        this.server = server;
        this.log.info({ socket: this.socketPath }, 'takeover socket listening');
        resolve();
      });
    });
  }

  /** Stops answering; the socket file goes (libuv unlinks it), so a successor can listen there. */
  close(): void {
    this.server?.close();
    this.server = null;
  }

  private serve(socket: net.Socket): void {
    socket.on('error', (err) => this.log.warn({ err: err.message }, 'takeover connection error'));
    const fd = (socket as net.Socket & { _handle?: { fd?: number } | null })._handle?.fd ?? -1;
    const uid = fd >= 0 ? fdPassing!.fdPeerUid(fd) : -1;
    const me = process.getuid?.() ?? -1;
    if (uid < 0 || (uid !== me && uid !== 0)) {
      this.log.warn({ peer_uid: uid }, 'takeover refused: the peer runs as another user');
      socket.end(`${JSON.stringify({ error: 'the takeover socket answers only its own user' })}\n`);
      return;
    }
    let buffered = '';
    const onRequest = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const nl = buffered.indexOf('\n');
      if (nl < 0) {
        if (buffered.length > MAX_LINE) socket.destroy();
        return;
      }
      socket.removeListener('data', onRequest);
      let req: { takeover?: number; pid?: number; stats?: number; carry?: unknown };
      try {
        req = JSON.parse(buffered.slice(0, nl)) as typeof req;
        if (typeof req.pid !== 'number' || (req.takeover !== 1 && req.stats !== 1))
          throw new Error('not a takeover request');
      } catch (err) {
        socket.end(`${JSON.stringify({ error: `bad request: ${(err as Error).message}` })}\n`);
        return;
      }
      if (req.stats === 1) {
        const ok = this.source.carried?.(req.pid, req.carry) ?? false;
        socket.end(`${JSON.stringify(ok ? { ok: true } : { error: 'counters not taken' })}\n`);
        return;
      }
      this.request(socket, fd, req.pid);
    };
    socket.on('data', onRequest);
  }

  private request(socket: net.Socket, fd: number, pid: number): void {
    if (this.busy || this.done) {
      socket.end(
        `${JSON.stringify({ error: this.done ? 'this process has handed over already' : 'a takeover is under way' })}\n`,
      );
      return;
    }
    this.handOver(socket, fd, pid);
  }

  private handOver(socket: net.Socket, fd: number, pid: number): void {
    const listeners = this.source.listeners();
    if (!listeners || listeners.length === 0 || listeners.some((l) => l.fd < 0)) {
      socket.end(`${JSON.stringify({ error: 'this process is not listening (shutting down?)' })}\n`);
      return;
    }
    this.busy = true;
    // The path is freed now, so the successor can listen there once it serves.
    this.close();
    const answer = `${JSON.stringify({ pid: process.pid, listeners: listeners.map((l) => l.passed), stats: this.source.stats?.() })}\n`;
    try {
      fdPassing!.fdSend(
        fd,
        Buffer.from(answer),
        listeners.map((l) => l.fd),
      );
    } catch (err) {
      this.log.warn(
        { successor: pid, err: (err as Error).message },
        'takeover failed: the listening sockets could not be sent; serving on',
      );
      socket.destroy();
      void this.resume();
      return;
    }
    this.log.info(
      { successor: pid, listeners: listeners.map((l) => `${l.passed.name} ${l.passed.host}:${l.passed.bound}`) },
      'takeover: listening sockets sent, waiting for the new process to listen',
    );
    let buffered = '';
    let settled = false;
    const timer = setTimeout(() => finish(false, `no word within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
    const finish = (ready: boolean, why: string, rest = '') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeListener('data', onReady);
      socket.removeListener('close', onClose);
      if (ready) {
        this.done = true;
        this.log.info(
          { successor: pid },
          'takeover: the new process listens; this one stops accepting, moves its clients there and shuts down',
        );
        this.source.handedOver(pid, { socket, fd, rest });
        return;
      }
      socket.destroy();
      this.log.warn(
        { successor: pid, reason: why },
        'takeover abandoned: the new process did not take over; serving on',
      );
      void this.resume();
    };
    const onReady = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const nl = buffered.indexOf('\n');
      if (nl < 0) return;
      const ready = /^\{"ready":true\}$/.test(buffered.slice(0, nl));
      finish(ready, ready ? '' : 'it sent no ready', buffered.slice(nl + 1));
    };
    const onClose = () => finish(false, 'it closed the connection');
    socket.on('data', onReady);
    socket.on('close', onClose);
  }

  private async resume(): Promise<void> {
    this.busy = false;
    if (this.done || this.server) return;
    await this.open();
  }
}

/** The new process of a takeover takes the old one's server connections, unless TIDEPOOL_TAKEOVER_SERVERS=0. */
export function takesServers(): boolean {
  return process.env.TIDEPOOL_TAKEOVER_SERVERS !== '0';
}

/** The new process of a takeover takes clients linked to their server with it, unless TIDEPOOL_TAKEOVER_PAIRS=0 (for a
 * fault, or a comparison: bench/pooler-takeover-linked.ts). */
export function takesPairs(): boolean {
  return process.env.TIDEPOOL_TAKEOVER_PAIRS !== '0';
}

/** True when a process answers at `socketPath` (a socket file left by a process that died answers nobody). */
function answers(socketPath: string): Promise<boolean> {
  if (!existsSync(socketPath)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const s = net.connect(socketPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
