// Logged-in clients by the key of their BackendKeyData, for CancelRequests (several clients can share a pid), and the
// pids the pooler hands out.
import { timingSafeEqual } from 'node:crypto';
import { IdTable } from './id-table.js';

/** The first pid the pooler gives a client of its own (transaction mode, the admin console): past Linux's largest
 * pid_max (2^22), so no backend of any cluster has it, and a pg_terminate_backend or pg_cancel_backend that a client
 * runs with its BackendKeyData pid (thinking it its backend's) fails instead of hitting an unrelated backend. */
export const FIRST_POOLER_PID = 4_194_305;
/** Logins the native relay runs get its endpoint id with this bit as their pid (native/relay-auth.cc kCancelPidBit;
 * the relay's ids stay below it): JavaScript's own pids stay below it, so the two never meet. */
export const NATIVE_LOGIN_PID_BIT = 0x4000_0000;

/** What the registry needs of a client: the pid and secret it was given at login. */
export interface CancelKeyed {
  cancelPid: number;
  readonly cancelSecret: Buffer;
}

export class CancelKeys<C extends CancelKeyed> {
  /** A session-mode client's pid is its server's (pg_backend_pid() and NotificationResponse pids then match), which
   * two clients in turn may share for a moment: a list per pid. */
  private readonly byPid = new IdTable<C[]>();
  private nextPid = FIRST_POOLER_PID;

  /** A pid for a new client's BackendKeyData, in [FIRST_POOLER_PID, NATIVE_LOGIN_PID_BIT), that no registered client
   * holds. (One still logging in is not registered: two could meet only if the count went round, a billion logins,
   * during one login; their secrets would still tell them apart.) */
  newPid(): number {
    for (;;) {
      const pid = this.nextPid;
      this.nextPid = pid + 1 < NATIVE_LOGIN_PID_BIT ? pid + 1 : FIRST_POOLER_PID;
      if (this.byPid.get(pid) === undefined) return pid;
    }
  }

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
    return this.byPid
      .get(pid)
      ?.find((k) => k.cancelSecret.length === secret.length && timingSafeEqual(k.cancelSecret, secret));
  }
}
