// relayInit's event buffer (native/relay.cc): it must hold a login's longest group of events (three: kAccepted, kLoginOk,
// kLent), which the relay hands to JavaScript in one round; a shorter buffer is refused rather than left to a flush
// that could never deliver the group. A relay lives per thread, so each case asks in a worker thread of its own (a
// relay once started stays for its thread's life: the accepted size, three events, is relay-event-backlog.test.ts's).
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../../src/shared/package-root.js';
import { requireAddon } from '../../helpers/native.js';

/** relayInit in a fresh thread with an events buffer of `slots` Int32s: 'started', or the error's name and message. */
async function initWith(slots: number): Promise<string> {
  requireAddon();
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const a = require(workerData.file);
    try {
      const ok = a.relayInit(() => {}, new Int32Array(workerData.slots), new Int32Array(6).fill(-1), new Float64Array(1));
      parentPort.postMessage(ok === true ? 'started' : String(ok));
    } catch (err) {
      parentPort.postMessage(err.name + ': ' + err.message);
    }`;
  const w = new Worker(code, { eval: true, workerData: { file: path.join(packageRoot, 'build', 'Release', 'tidepool_native.node'), slots } });
  try {
    return await new Promise<string>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
  } finally {
    await w.terminate();
  }
}

describe('relayInit: the shared event buffer', () => {
  it('refuses a buffer shorter than three events', async () => {
    expect(await initWith(10)).toBe('RangeError: relayInit: the events buffer must hold at least 3 events (15 Int32 slots)');
    expect(await initWith(14)).toBe('RangeError: relayInit: the events buffer must hold at least 3 events (15 Int32 slots)');
  });
});
