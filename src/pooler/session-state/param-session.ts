// One transaction-mode client's session parameters against the servers it gets: read back at check-in, synced before a transaction.
import type { ServerConnection } from '../server-connection.js';
import type { ClientParams } from './params.js';
import { forgetValues, inSync, readBack, syncFor } from './param-sync.js';

/** What the client's session does for its parameters. */
export interface ParamSessionHost {
  /** The server goes back to the pool (`reusable` false: closed, its state unknown). */
  release(s: ServerConnection, reusable: boolean): void;
  /** Bytes for the client (ParameterStatus), written while it is unlinked. */
  tell(data: Buffer): void;
  /** A server may be asked for now, if the client still waits for one. */
  acquire(): void;
  /** The tracked list (built-in names and track_extra_parameters), as configured now. */
  tracked(): readonly string[];
  warn(fields: Record<string, unknown>, message: string): void;
}

export class ParamSession {
  /** A read-back of this client's values is under way: its next server waits for it. */
  private busy = false;
  private wantsServer = false;
  /** The server given last runs a set_config ahead (sync): it is the client's, but not linked yet. */
  syncing = false;

  constructor(
    readonly client: ClientParams,
    private readonly host: ParamSessionHost,
  ) {}

  /** No read-back or sync under way, and no server awaited: the client may move to another process (takeover). */
  get idle(): boolean {
    return !this.busy && !this.syncing && !this.wantsServer;
  }

  /** The client needs a server: false when it must wait for a read-back (acquire() follows it). */
  mayAcquire(): boolean {
    if (!this.busy) return true;
    this.wantsServer = true;
    return false;
  }

  /** A server back from this client (`stays`: the client lives on; false: it left) goes to the pool, after a read-back
   * of its parameters when its last transaction may have changed one (then true). */
  checkIn(s: ServerConnection, stays: boolean): boolean {
    const changes = s.end.takeParams();
    if (!changes) {
      this.host.release(s, true);
      return false;
    }
    const client = stays ? this.client : null;
    if (client) this.busy = true;
    readBack(s, changes, client, this.host.tracked(), (reusable, tell) => {
      if (!reusable)
        this.host.warn(
          { server_id: s.id, backend_pid: s.backendPid },
          'session parameters could not be read back: server closed',
        );
      if (tell) this.host.tell(tell);
      this.host.release(s, reusable);
      if (!client) return;
      this.busy = false;
      if (this.wantsServer) {
        this.wantsServer = false;
        this.host.acquire();
      }
    });
    return true;
  }

  /** A pinned client's server goes its own way (cleaned, or closed: session-state/pins.ts): what it holds is not
   * known any more, and is read back before it next serves a client. */
  forget(s: ServerConnection): void {
    forgetValues(s, s.end.takeParams(), this.host.tracked());
  }

  /** `s` has this client's values already: sync would run nothing. */
  inSync(s: ServerConnection): boolean {
    return inSync(s, this.client, this.host.tracked());
  }

  /** Before the client's first message of a transaction on `s`: true when a set_config runs ahead (`then(ok)` at
   * its ReadyForQuery; not called if the server dies first), false when the server holds the client's values. */
  sync(s: ServerConnection, then: (ok: boolean) => void): boolean {
    const started = syncFor(s, this.client, this.host.tracked(), (ok) => {
      this.syncing = false;
      if (!ok) {
        s.closeOnRelease = true;
        this.host.warn(
          { server_id: s.id, backend_pid: s.backendPid },
          "server refused a client's session parameters: closed after this transaction",
        );
      }
      then(ok);
    });
    if (started) this.syncing = true;
    return started;
  }
}
