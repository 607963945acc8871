// Client connections moved by a takeover (issue 38): once the new process listens (takeover.ts), the old one sends it
// each client that is between transactions, over the same Unix socket: the client's descriptor (SCM_RIGHTS) with what
// the new process needs to carry on as if it had logged the client in itself (its pool, session parameters, cancel
// key, protocol-level prepared statements and the bytes it sent that no server got). The new process answers each
// one: taken (the old process closes its copy and forgets the client) or refused (the old process takes it back).
//
// Old -> new, one frame per client: u32 length of the rest, u32 length of the JSON header, the header (UTF-8), then
// the pending bytes; the client's descriptor rides with the frame's first byte (descriptors are taken in order; a
// linked client's frame has two).
// New -> old, one JSON line each: {"took":id}, {"refused":id,"reason"}, or {"cancel":pid,"secret":hex} (a
// CancelRequest for a client the new process does not have: it may still be on the old one), and first
// {"servers":1}: it takes server connections too (takeover-servers.ts; their frames' headers have "server":1), and
// {"pairs":1}: it takes a client linked to its server (session mode, or pinned by session state) with that server, in
// one frame whose header has "linked" (the server's header) and which carries two descriptors, the client's first.
import type net from 'node:net';
import type { Logger } from 'pino';
import { fdPassing, type FdPassing } from '../native/fd-passing.js';
import {
  closeMovedServer,
  decodeServer,
  encodeServer,
  serverHeader,
  type MovableServer,
  type MovedServer,
  type ServerHeader,
} from './takeover-servers.js';

/** A protocol-level prepared statement of a moved client: its own name, text and parameter type OIDs (as in Parse:
 * the Int16 count, then Int32 each). */
export interface MovedStatement {
  name: string;
  query: Buffer;
  types: Buffer;
}

/** A client as it moves between processes. */
export interface MovedClient {
  database: string;
  user: string;
  applicationName: string;
  protocol32: boolean;
  /** When the first process accepted it (Date.now() time). */
  connectedAt: number;
  /** Its BackendKeyData, as the client was told at login: a CancelRequest with it reaches the new process. */
  cancelPid: number;
  cancelSecret: Buffer;
  /** Its session parameters (lower-case names) and what it asked for at startup (RESET returns there). */
  params: [string, string][];
  startup: [string, string][];
  statements: MovedStatement[];
  /** Bytes it sent that no server got, from a message boundary on. */
  pending: Buffer;
  /** A client that moves with the server it is linked to (session mode, or pinned), or absent. */
  linked?: LinkedServer;
}

/** The server a client moves with, and the state of the pair. */
export interface LinkedServer {
  server: MovedServer;
  /** The kinds of session state the client is pinned for (session-state/state-scan.ts), 0 in session mode. */
  pinned: number;
  /** Session mode (else a pinned transaction-mode client): the new process's pool must be in the same mode. */
  session: boolean;
  /** Session mode: startup parameters were applied to the server (its reset must undo them). */
  appliedStartup: boolean;
  /** Bytes PostgreSQL sent that the client was not sent yet (whole messages): written to it first. */
  toClient: Buffer;
}

interface Header {
  id: number;
  database: string;
  user: string;
  application_name: string;
  protocol32: boolean;
  connected_at: number;
  cancel_pid: number;
  cancel_secret: string;
  params: [string, string][];
  startup: [string, string][];
  statements: { name: string; query: string; types: string }[];
  linked?: ServerHeader;
  pinned?: number;
  session?: boolean;
  applied_startup?: boolean;
  to_client?: string;
}

/** One client's frame (see the top of this file). */
export function encodeMoved(id: number, m: MovedClient): Buffer {
  const header: Header = {
    id,
    database: m.database,
    user: m.user,
    application_name: m.applicationName,
    protocol32: m.protocol32,
    connected_at: m.connectedAt,
    cancel_pid: m.cancelPid,
    cancel_secret: m.cancelSecret.toString('hex'),
    params: m.params,
    startup: m.startup,
    statements: m.statements.map((s) => ({
      name: s.name,
      query: s.query.toString('base64'),
      types: s.types.toString('base64'),
    })),
  };
  const l = m.linked;
  if (l) {
    header.linked = serverHeader(0, l.server);
    header.pinned = l.pinned;
    header.session = l.session;
    header.applied_startup = l.appliedStartup;
    header.to_client = l.toClient.toString('base64');
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const head = Buffer.allocUnsafe(8);
  head.writeUInt32BE(4 + json.length + m.pending.length, 0);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json, m.pending]);
}

/** A frame's body (after its length): the id and the client or server. Throws on a malformed one. */
export function decodeFrame(body: Buffer): { id: number; client?: MovedClient; server?: MovedServer } {
  const jsonLen = body.readUInt32BE(0);
  if (4 + jsonLen > body.length) throw new Error('takeover: client header longer than its frame');
  const h = JSON.parse(body.toString('utf8', 4, 4 + jsonLen)) as Header | ServerHeader;
  if ('server' in h && h.server === 1) {
    if (typeof h.id !== 'number') throw new Error('takeover: malformed server header');
    return { id: h.id, server: decodeServer(h) };
  }
  return decodeClient(body, h as Header, jsonLen);
}

/** A client's frame body (after its length): the id and the client. Throws on a malformed one. */
export function decodeMoved(body: Buffer): { id: number; client: MovedClient } {
  const jsonLen = body.readUInt32BE(0);
  if (4 + jsonLen > body.length) throw new Error('takeover: client header longer than its frame');
  return decodeClient(body, JSON.parse(body.toString('utf8', 4, 4 + jsonLen)) as Header, jsonLen);
}

function decodeClient(body: Buffer, h: Header, jsonLen: number): { id: number; client: MovedClient } {
  if (typeof h.id !== 'number' || typeof h.database !== 'string' || typeof h.user !== 'string')
    throw new Error('takeover: malformed client header');
  return {
    id: h.id,
    client: {
      database: h.database,
      user: h.user,
      applicationName: h.application_name ?? '',
      protocol32: h.protocol32 === true,
      connectedAt: typeof h.connected_at === 'number' ? h.connected_at : Date.now(),
      cancelPid: h.cancel_pid,
      cancelSecret: Buffer.from(h.cancel_secret ?? '', 'hex'),
      params: h.params ?? [],
      startup: h.startup ?? [],
      statements: (h.statements ?? []).map((s) => ({
        name: s.name,
        query: Buffer.from(s.query, 'base64'),
        types: Buffer.from(s.types, 'base64'),
      })),
      pending: Buffer.from(body.subarray(4 + jsonLen)),
      ...(h.linked
        ? {
            linked: {
              server: decodeServer(h.linked),
              pinned: typeof h.pinned === 'number' ? h.pinned : 0,
              session: h.session === true,
              appliedStartup: h.applied_startup === true,
              toClient: Buffer.from(h.to_client ?? '', 'base64'),
            },
          }
        : {}),
    },
  };
}

/** What the old process's clients offer the mover (ClientSession). */
export interface MovableClient {
  /** Lets go of the connection if it is between transactions: its state and a descriptor of it (and of its linked
   * server, `serverFd`, when it moves as a pair: only if `pairs`, the new process takes pairs), or why not. */
  moveOut(pairs: boolean): { client: MovedClient; fd: number; serverFd?: number } | string;
  /** The new process took it: forget it, without a word to it. */
  movedAway(): void;
  /** The new process refused it or is gone: serve it again from `fd` (this process's copy), with its linked server
   * from `serverFd` when it went as a pair. */
  moveBack(fd: number, pending: Buffer, why: string, serverFd?: number): void;
}

/** What the old process's mover needs of the pooler. */
export interface MoverHost<C extends MovableClient> {
  readonly clients: Iterable<C>;
  /** The server connections idle in its pools now (offered once the new process takes servers). */
  movableServers?(): Iterable<MovableServer>;
  /** A CancelRequest the new process got for a key it does not know. */
  cancel(pid: number, secret: Buffer): void;
}

/** How often the old process looks again for clients that were busy (a read-back of parameters, a server lent at
 * login); those that come between transactions are offered at once (ClientSession's hooks). */
const SWEEP_MS = 50;

/** The old process's side, once the new one listens: moves its clients over the takeover connection. */
export class ClientMover<C extends MovableClient> {
  private readonly f: FdPassing;
  private nextId = 1;
  /** Clients (`c`) and servers (`c` null) sent and not answered yet. */
  private readonly inFlight = new Map<number, { c: C | null; fd: number; pending: Buffer; serverFd?: number }>();
  /** The new process said it takes server connections ({"servers":1}). */
  private takesServers = false;
  /** The new process said it takes a client with its linked server ({"pairs":1}). */
  private takesPairs = false;
  private out: { buf: Buffer; fds: number[] }[] = [];
  private retry: NodeJS.Timeout | null = null;
  private readonly sweep: NodeJS.Timeout;
  private lines = '';
  private open = true;
  /** Clients the new process took, and refused; servers likewise. */
  moved = 0;
  refused = 0;
  serversMoved = 0;
  serversRefused = 0;
  /** Called once the connection is gone (after the clients on their way came back). */
  onClose: () => void = () => undefined;
  /** Called for each server connection the new process took. */
  onServerMoved: () => void = () => undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly fd: number,
    private readonly host: MoverHost<C>,
    private readonly log: Logger,
    rest: string,
  ) {
    this.f = fdPassing!;
    socket.on('data', (chunk: Buffer) => this.onData(chunk.toString('utf8')));
    socket.on('close', () => this.closed('the new process closed the takeover connection'));
    socket.on('error', () => undefined);
    this.sweep = setInterval(() => this.offerAll(), SWEEP_MS);
    this.sweep.unref();
    if (rest) this.onData(rest);
  }

  /** Still moving clients: the new process answers. */
  get active(): boolean {
    return this.open;
  }

  /** Clients sent and not answered yet. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Offers every idle server (first: a client that moves next finds them there) and every client of the pooler
   * (the first sweep, and each later one). */
  offerAll(): void {
    if (!this.open) return;
    this.offerServers();
    for (const c of [...this.host.clients]) this.offer(c);
  }

  /** Sends every server idle in the pools now, if the new process takes servers. */
  offerServers(): void {
    if (!this.open || !this.takesServers || !this.host.movableServers) return;
    for (const s of [...this.host.movableServers()]) {
      const out = s.moveOut();
      if (typeof out === 'string') {
        if (this.log.isLevelEnabled('debug')) this.log.debug({ reason: out }, 'takeover: server cannot move now');
        continue;
      }
      const id = this.nextId++;
      this.inFlight.set(id, { c: null, fd: out.fd, pending: Buffer.alloc(0) });
      this.out.push({ buf: encodeServer(id, out.server), fds: [out.fd] });
    }
    this.pump();
  }

  /** Sends `c` to the new process if it is between transactions: true when it is on its way (or moved). */
  offer(c: C): boolean {
    if (!this.open) return false;
    // (A client on its way answers that it cannot move: its relay end is gone.)
    const out = c.moveOut(this.takesPairs);
    if (typeof out === 'string') {
      if (this.log.isLevelEnabled('debug')) this.log.debug({ reason: out }, 'takeover: client cannot move now');
      return false;
    }
    const id = this.nextId++;
    const serverFd = out.serverFd;
    this.inFlight.set(id, { c, fd: out.fd, pending: out.client.pending, serverFd });
    this.out.push({ buf: encodeMoved(id, out.client), fds: serverFd === undefined ? [out.fd] : [out.fd, serverFd] });
    this.pump();
    return true;
  }

  private pump(): void {
    if (this.retry) return;
    while (this.open && this.out.length > 0) {
      const head = this.out[0]!;
      let n: number;
      try {
        n = this.f.fdSendSome(this.fd, head.buf, head.fds);
      } catch (err) {
        this.closed(`sending a client failed: ${(err as Error).message}`);
        return;
      }
      if (n === 0) {
        // The new process reads on: its socket buffer is full for now.
        this.retry = setTimeout(() => {
          this.retry = null;
          this.pump();
        }, 5);
        return;
      }
      if (n < head.buf.length) {
        head.buf = head.buf.subarray(n);
        head.fds = [];
      } else this.out.shift();
    }
  }

  private onData(text: string): void {
    this.lines += text;
    let nl: number;
    while ((nl = this.lines.indexOf('\n')) >= 0) {
      const line = this.lines.slice(0, nl);
      this.lines = this.lines.slice(nl + 1);
      let msg: {
        took?: number;
        refused?: number;
        reason?: string;
        cancel?: number;
        secret?: string;
        servers?: number;
        pairs?: number;
      };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        this.log.warn({ line: line.slice(0, 200) }, 'takeover: unreadable answer from the new process');
        continue;
      }
      if (typeof msg.took === 'number') this.answer(msg.took, null);
      else if (typeof msg.refused === 'number') this.answer(msg.refused, msg.reason ?? 'refused');
      else if (typeof msg.cancel === 'number' && typeof msg.secret === 'string')
        this.host.cancel(msg.cancel, Buffer.from(msg.secret, 'hex'));
      else if (msg.pairs === 1) this.takesPairs = true;
      else if (msg.servers === 1 && !this.takesServers) {
        this.takesServers = true;
        this.offerServers();
      }
    }
  }

  private answer(id: number, refused: string | null): void {
    const v = this.inFlight.get(id);
    if (!v) return;
    this.inFlight.delete(id);
    if (v.c === null) {
      // A server: this process's copy closes either way; a refused one is told to end.
      if (refused === null) {
        this.serversMoved++;
        this.f.fdClose(v.fd);
        this.onServerMoved();
      } else {
        this.serversRefused++;
        this.log.info({ reason: refused }, 'takeover: the new process refused a server connection; it is closed');
        closeMovedServer(v.fd);
      }
      return;
    }
    if (refused === null) {
      this.moved++;
      this.log.debug({ move: id }, 'takeover: client moved');
      this.f.fdClose(v.fd);
      if (v.serverFd !== undefined) this.f.fdClose(v.serverFd);
      v.c.movedAway();
      return;
    }
    this.refused++;
    this.log.info({ reason: refused }, 'takeover: the new process refused a client; it stays here');
    v.c.moveBack(v.fd, v.pending, refused, v.serverFd);
  }

  /** The connection is gone (the new process exited, or this one stops): clients on their way come back. */
  private closed(why: string): void {
    if (!this.open) return;
    this.open = false;
    clearInterval(this.sweep);
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.out = [];
    this.socket.destroy();
    if (this.inFlight.size > 0)
      this.log.warn({ clients: this.inFlight.size, reason: why }, 'takeover: clients on their way stay here');
    const back = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const v of back) {
      if (v.c === null) {
        // A server on its way: the new process may have it (and then its own descriptor): this copy just closes.
        this.f.fdClose(v.fd);
        continue;
      }
      this.refused++;
      v.c.moveBack(v.fd, v.pending, why, v.serverFd);
    }
    this.onClose();
  }

  /** This process stops (after shutdown_timeout if clients were still on their way): the connection closes, and a
   * client not answered for is left to the new process, which has its own descriptor if it took it. */
  close(): void {
    for (const v of this.inFlight.values()) {
      this.f.fdClose(v.fd);
      if (v.serverFd !== undefined) this.f.fdClose(v.serverFd);
    }
    this.inFlight.clear();
    this.closed('this process stops');
  }
}

/** What the new process's receiver needs of the pooler. */
export interface ReceiverHost {
  /** Takes over a client from the old process: null when it serves it now, else why not (the old one keeps it). The
   * descriptor is the host's from the call on, whatever the answer. */
  adoptMoved(m: MovedClient, fd: number, serverFd?: number): string | null;
  /** Takes over an idle server connection of the old process into its pool: null when pooled, else why not (the old
   * one closes it). The descriptor is the host's from the call on, whatever the answer. */
  adoptMovedServer(m: MovedServer, fd: number): string | null;
}

/** The new process's side: takes the clients the old one sends, until it closes the connection. */
export class ClientReceiver {
  private readonly f: FdPassing;
  private buf: Buffer = Buffer.alloc(0);
  private readonly fds: number[] = [];
  private open = true;
  /** Clients taken, and refused; servers likewise. */
  took = 0;
  refused = 0;
  serversTook = 0;
  serversRefused = 0;

  constructor(
    private readonly fd: number,
    private readonly host: ReceiverHost,
    private readonly log: Logger,
  ) {
    this.f = fdPassing!;
    this.f.fdWatch(fd, () => this.onReadable());
  }

  get active(): boolean {
    return this.open;
  }

  private onReadable(): void {
    while (this.open) {
      let got: { data: Buffer; fds: number[] } | undefined;
      try {
        got = this.f.fdReceiveNow(this.fd);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'takeover: reading from the old process failed');
        this.close();
        return;
      }
      if (!got) break;
      this.fds.push(...got.fds);
      if (got.data.length === 0) {
        this.close();
        return;
      }
      this.buf = this.buf.length ? Buffer.concat([this.buf, got.data]) : got.data;
      this.frames();
    }
  }

  private frames(): void {
    while (this.open && this.buf.length >= 4) {
      const total = this.buf.readUInt32BE(0);
      if (this.buf.length < 4 + total) return;
      const body = this.buf.subarray(4, 4 + total);
      this.buf = this.buf.subarray(4 + total);
      const fd = this.fds.shift();
      let serverFd: number | undefined;
      let decoded: { id: number; client?: MovedClient; server?: MovedServer };
      try {
        if (fd === undefined) throw new Error('takeover: a client came without its descriptor');
        decoded = decodeFrame(body);
        // A pair's second descriptor is its server's.
        if (decoded.client?.linked) {
          serverFd = this.fds.shift();
          if (serverFd === undefined) throw new Error('takeover: a linked client came without its server descriptor');
        }
      } catch (err) {
        if (fd !== undefined) this.f.fdClose(fd);
        if (serverFd !== undefined) this.f.fdClose(serverFd);
        this.log.error({ err: (err as Error).message }, 'takeover: malformed client frame; no more clients taken');
        this.close();
        return;
      }
      let why: string | null;
      try {
        why = decoded.server
          ? this.host.adoptMovedServer(decoded.server, fd)
          : this.host.adoptMoved(decoded.client!, fd, serverFd);
      } catch (err) {
        why = `adopting it failed: ${(err as Error).message}`;
      }
      if (decoded.server) {
        if (why === null) this.serversTook++;
        else this.serversRefused++;
      } else if (why === null) this.took++;
      else this.refused++;
      this.send(why === null ? { took: decoded.id } : { refused: decoded.id, reason: why });
    }
  }

  /** A CancelRequest for a key this process does not know goes to the old one, which may still serve that client. */
  forwardCancel(pid: number, secret: Buffer): boolean {
    if (!this.open) return false;
    this.send({ cancel: pid, secret: secret.toString('hex') });
    return true;
  }

  private send(msg: object): void {
    try {
      this.f.fdSend(this.fd, Buffer.from(`${JSON.stringify(msg)}\n`), []);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'takeover: answering the old process failed');
      this.close();
    }
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.f.fdUnwatch(this.fd);
    this.f.fdClose(this.fd);
    for (const fd of this.fds.splice(0)) this.f.fdClose(fd);
    this.log.info(
      {
        took: this.took,
        refused: this.refused,
        servers_took: this.serversTook,
        servers_refused: this.serversRefused,
      },
      'takeover: the old process is done handing over clients',
    );
  }
}
