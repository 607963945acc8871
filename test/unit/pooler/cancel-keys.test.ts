// CancelKeys: pids for new clients past any backend's and below the native relay's, skipping those registered clients
// hold, and the (pid, secret) lookup of CancelRequests.
import { describe, expect, it } from 'vitest';
import { CancelKeys, FIRST_POOLER_PID, NATIVE_LOGIN_PID_BIT } from '../../../src/pooler/cancel-keys.js';

const keyed = (cancelPid: number, secret = [1, 2, 3, 4]) => ({ cancelPid, cancelSecret: Buffer.from(secret) });

describe('CancelKeys', () => {
  it('hands out pids past pid_max (2^22), one after another, skipping those registered clients hold', () => {
    const keys = new CancelKeys<ReturnType<typeof keyed>>();
    expect(FIRST_POOLER_PID).toBe(2 ** 22 + 1);
    keys.add(keyed(FIRST_POOLER_PID + 1));
    expect([keys.newPid(), keys.newPid(), keys.newPid()]).toEqual([
      FIRST_POOLER_PID,
      FIRST_POOLER_PID + 2,
      FIRST_POOLER_PID + 3,
    ]);
  });

  it("starts over below the native relay's pids, still skipping those in use", () => {
    const keys = new CancelKeys<ReturnType<typeof keyed>>();
    keys.add(keyed(FIRST_POOLER_PID));
    (keys as unknown as { nextPid: number }).nextPid = NATIVE_LOGIN_PID_BIT - 1;
    expect([keys.newPid(), keys.newPid()]).toEqual([NATIVE_LOGIN_PID_BIT - 1, FIRST_POOLER_PID + 1]);
  });

  it('finds a client by pid and secret; a wrong secret finds none', () => {
    const keys = new CancelKeys<ReturnType<typeof keyed>>();
    const a = keyed(4242, [1, 1, 1, 1]);
    const b = keyed(4242, [2, 2, 2, 2]);
    keys.add(a);
    keys.add(b);
    expect(keys.find(4242, Buffer.from([2, 2, 2, 2]))).toBe(b);
    expect(keys.find(4242, Buffer.from([3, 3, 3, 3]))).toBeUndefined();
    keys.drop(b);
    expect(keys.find(4242, Buffer.from([2, 2, 2, 2]))).toBeUndefined();
    expect(keys.find(4242, Buffer.from([1, 1, 1, 1]))).toBe(a);
  });
});
