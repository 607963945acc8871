// Logged-in clients by the key of their BackendKeyData, for CancelRequests (several clients can share a pid).
import { timingSafeEqual } from 'node:crypto';
import { IdTable } from './id-table.js';

/** What the registry needs of a client: the pid and secret it was given at login. */
export interface CancelKeyed {
  cancelPid: number;
  readonly cancelSecret: Buffer;
}

export class CancelKeys<C extends CancelKeyed> {
  /** A session-mode client's pid is its server's, which may equal another client's id: a list per pid. */
  private readonly byPid = new IdTable<C[]>();

  add(c: C): void {
    const list = this.byPid.get(c.cancelPid);
    if (list) list.push(c);
    else this.byPid.set(c.cancelPid, [c]);
  }

  drop(c: C): void {
    const list = this.byPid.get(c.cancelPid);
    if (!list) return;
    const i = list.indexOf(c);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.byPid.delete(c.cancelPid);
  }

  /** The client whose key is (pid, secret), compared in constant time; undefined when none is. */
  find(pid: number, secret: Buffer): C | undefined {
    return this.byPid.get(pid)?.find((k) => k.cancelSecret.length === secret.length && timingSafeEqual(k.cancelSecret, secret));
  }
}
