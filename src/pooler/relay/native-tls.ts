// TLS toward clients terminated by the native relay (native/relay-tls.cc): contexts from PEM bytes, and the login-time socket a session talks through.
import { EventEmitter } from 'node:events';
import tls from 'node:tls';
import type { TlsVersion } from '../../config/pooler.js';
import { IdTable } from '../id-table.js';

/** What relayTlsInfo reports once the handshake is done. */
export interface NativeTlsInfo {
  protocol: string;
  cipher: string;
  alpn: string;
  /** The client certificate's CN, '' without one. */
  commonName: string;
  /** '' when the client's certificate verified; else Node's name for why (UNABLE_TO_GET_ISSUER_CERT_LOCALLY...), or 'no certificate'. */
  verifyError: string;
}

/** An OpenSSL SSL_CTX held by the addon (freed when the last session using it and this handle are gone). */
export type NativeTlsContext = { readonly __sslCtx: unique symbol };

/** The addon's TLS functions (relay-tls.cc). */
export interface TlsAddon {
  relayTlsContext(o: {
    key: Uint8Array;
    cert: Uint8Array;
    ca?: Uint8Array;
    minVersion: number;
    maxVersion: number;
    cipherList: string;
    cipherSuites: string;
  }): NativeTlsContext;
  relayAddTlsClient(fd: number, context: NativeTlsContext, askCertificate: boolean, initial?: Uint8Array): number;
  relayStartTls(id: number, context: NativeTlsContext, askCertificate: boolean, initial?: Uint8Array): boolean;
  relayAdopt(
    id: number,
    stats: Float64Array,
    maxMessage: number,
    initial?: Uint8Array,
    divert?: boolean,
    app?: Float64Array,
    pinMask?: number,
    queryPool?: number,
  ): boolean;
  relayTlsInfo(id: number): NativeTlsInfo | null;
  relayTlsError(id: number): string;
  relayTake(id: number): Buffer;
  relayWrite(id: number, data: Uint8Array): boolean;
  /** Milliseconds since the relay's listener accepted client `id`; -1 when it did not. */
  relayAcceptedAge(id: number): number;
}

const VERSION_NUMBERS: Record<TlsVersion, number> = {
  TLSv1: 0x0301,
  'TLSv1.1': 0x0302,
  'TLSv1.2': 0x0303,
  'TLSv1.3': 0x0304,
};

/** Builds an OpenSSL context as tls.createSecureContext would from the same options (`ciphers` undefined: Node's
 * default list, split as Node splits it into TLS 1.2 ciphers and TLS 1.3 suites). Throws with OpenSSL's reason. */
export function nativeTlsContext(
  a: TlsAddon,
  o: { key: Buffer; cert: Buffer; ca?: Buffer; min: TlsVersion; max: TlsVersion; ciphers?: string },
): NativeTlsContext {
  const all = (o.ciphers ?? tls.DEFAULT_CIPHERS).split(':').filter((c) => c.length > 0);
  return a.relayTlsContext({
    key: o.key,
    cert: o.cert,
    ca: o.ca,
    minVersion: VERSION_NUMBERS[o.min],
    maxVersion: VERSION_NUMBERS[o.max],
    cipherList: all.filter((c) => !c.startsWith('TLS_')).join(':'),
    cipherSuites: all.filter((c) => c.startsWith('TLS_')).join(':'),
  });
}

/** What a session hears from its client during a natively terminated login. */
export interface NativeTlsHandlers {
  /** The handshake is done. */
  onSecure(info: NativeTlsInfo | null): void;
  /** Decrypted bytes. */
  onData(chunk: Buffer): void;
}

/** A client in login held by the addon, until the relay adopts it: after a TLS handshake the addon runs (the TLS
 * session is the addon's), or from its accept on the relay's own listener (plaintext until relayStartTls). JavaScript
 * runs the login. It looks to the session as much like a socket as the login needs (write, end, destroy, 'error' and
 * 'close', the peer's address); net.Socket's 'close' after end() or destroy() comes on the next tick here too. */
export class NativeTlsSocket extends EventEmitter {
  readonly nativeTls = true;
  readonly writableLength = 0;
  destroyed = false;
  /** Set once the relay took the endpoint as a relayed client: no more events here. */
  private adopted = false;
  /** A relay-only login (native/relay-lend.cc): the relay adopted it itself. */
  lent = false;
  /** The peer's address (set when the relay accepted the connection itself). */
  remoteAddress: string | undefined;
  remotePort: number | undefined;
  /** When the relay's listener accepted it (Date.now() time), 0 when unknown. */
  acceptedAt = 0;
  /** The addon runs a TLS session for it (relayAddTlsClient, or relayStartTls on an accepted plaintext client). */
  encryptedByAddon: boolean;

  constructor(
    private readonly a: TlsAddon,
    readonly id: number,
    private handlers: NativeTlsHandlers,
    private readonly closer: {
      close(id: number, graceMs: number): void;
      destroy(id: number): void;
      forget(id: number): void;
    },
    tls = true,
  ) {
    super();
    this.encryptedByAddon = tls;
  }

  /** Where the login's reads and the handshake's end go. */
  setHandlers(handlers: NativeTlsHandlers): void {
    this.handlers = handlers;
  }

  /** A plaintext client (accepted by the relay) starts TLS under `context` (after the 'S', or at a direct hello whose
   * bytes so far are `initial`); false when it is gone. Throws when OpenSSL cannot make a session. */
  startTls(
    context: NativeTlsContext,
    askCertificate: boolean,
    initial: Buffer | null,
    handlers: NativeTlsHandlers,
  ): boolean {
    if (this.destroyed || this.adopted || this.encryptedByAddon) return false;
    this.handlers = handlers;
    if (!this.a.relayStartTls(this.id, context, askCertificate, initial?.length ? initial : undefined)) return false;
    this.encryptedByAddon = true;
    return true;
  }

  write(data: Buffer | string): boolean {
    if (this.destroyed) return false;
    const b = typeof data === 'string' ? Buffer.from(data) : data;
    if (this.corked > 0) {
      this.held.push(b);
      return true;
    }
    return this.a.relayWrite(this.id, b);
  }

  /** Writes wait until as many uncork() calls: a login's replies of one message go out in one send (net.Socket's
   * cork, which the session uses the same way). */
  cork(): void {
    this.corked++;
  }

  uncork(): void {
    if (this.corked === 0 || --this.corked > 0 || this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    if (!this.destroyed) this.a.relayWrite(this.id, held.length === 1 ? held[0]! : Buffer.concat(held));
  }

  private corked = 0;
  private held: Buffer[] = [];

  /** Sends what is pending (and close_notify), then closes. */
  end(data?: Buffer | string): this {
    if (data !== undefined) this.write(data);
    if (this.corked > 0) {
      this.corked = 1;
      this.uncork();
    }
    if (!this.destroyed) {
      this.closer.close(this.id, 5000);
      this.markClosed();
    }
    return this;
  }

  destroy(): this {
    if (!this.destroyed) {
      this.closer.destroy(this.id);
      this.markClosed();
    }
    return this;
  }

  private markClosed(): void {
    this.destroyed = true;
    this.closer.forget(this.id);
    process.nextTick(() => this.emit('close'));
  }

  /** relayAdopt took it: the session's relay end speaks for the connection from now on. */
  adopt(): void {
    this.adopted = true;
    this.closer.forget(this.id);
  }

  // ---- the addon's reports (NativeRelay routes them here) ----

  onReady(): void {
    if (this.destroyed || this.adopted) return;
    this.handlers.onSecure(this.a.relayTlsInfo(this.id));
  }

  onData(): void {
    if (this.destroyed || this.adopted) return;
    const data = this.a.relayTake(this.id);
    if (data.length) this.handlers.onData(data);
  }

  /** The client went (`error`: why, when not at its own EOF). */
  onClosed(error: string | null): void {
    if (this.destroyed || this.adopted) return;
    this.destroyed = true;
    if (error !== null && this.listenerCount('error') > 0) this.emit('error', new Error(error));
    this.emit('close');
  }
}

const NO_HANDLERS: NativeTlsHandlers = { onSecure: () => undefined, onData: () => undefined };

/** Clients in login held by the addon (TLS it terminates from the handoff after the 'S'; plaintext ones it accepted)
 * until the relay adopts them: the addon's reports about them (handshake done, bytes, close) go to their
 * NativeTlsSocket. */
export class NativeTlsLogins {
  private readonly logins = new IdTable<NativeTlsSocket>();

  constructor(
    private readonly a: TlsAddon,
    private readonly closer: { close(id: number, graceMs: number): void; destroy(id: number): void },
  ) {}

  /** Hands the descriptor `fd` (a duplicate is taken) to the addon, which runs the handshake under `context`. */
  start(
    fd: number,
    context: NativeTlsContext,
    askCertificate: boolean,
    initial: Buffer | null,
    handlers: NativeTlsHandlers,
  ): NativeTlsSocket {
    const id = this.a.relayAddTlsClient(fd, context, askCertificate, initial?.length ? initial : undefined);
    const s = new NativeTlsSocket(this.a, id, handlers, {
      close: (i, graceMs) => this.closer.close(i, graceMs),
      destroy: (i) => this.closer.destroy(i),
      forget: (i) => void this.logins.delete(i),
    });
    this.logins.set(id, s);
    return s;
  }

  /** A client the relay accepted (kAccepted): plaintext until its login asks for TLS; reads go nowhere until the
   * session sets its handlers. */
  accepted(id: number, address: string, port: number): NativeTlsSocket {
    const s = new NativeTlsSocket(
      this.a,
      id,
      NO_HANDLERS,
      {
        close: (i, graceMs) => this.closer.close(i, graceMs),
        destroy: (i) => this.closer.destroy(i),
        forget: (i) => void this.logins.delete(i),
      },
      false,
    );
    s.remoteAddress = address;
    s.remotePort = port;
    // A login the relay began and handed on keeps its accept time (client_login_timeout counts from there).
    const age = this.a.relayAcceptedAge(id);
    if (age > 0) s.acceptedAt = Date.now() - age;
    this.logins.set(id, s);
    return s;
  }

  ready(id: number): void {
    this.logins.get(id)?.onReady();
  }

  data(id: number): void {
    this.logins.get(id)?.onData();
  }

  /** The addon's close report: false when `id` is not a client in login. `reason` as CLIENT_CLOSE_REASONS; 3: TLS. */
  closed(id: number, reason: number, reasons: readonly string[]): boolean {
    const login = this.logins.get(id);
    if (!login) return false;
    this.logins.delete(id);
    login.onClosed(
      reason === 0
        ? null
        : reason === 3
          ? this.a.relayTlsError(id) || 'refused by OpenSSL'
          : (reasons[reason] ?? 'socket error'),
    );
    return true;
  }
}
