// native/fd-passing.cc: a descriptor sent over a real Unix socket arrives as a working descriptor of the same file;
// bad arguments throw instead of reaching C++.
import { afterEach, describe, expect, it } from 'vitest';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fdPassing } from '../../../src/native/fd-passing.js';
import { requireAddon } from '../../helpers/native.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'tp-fd-'));
  dirs.push(d);
  return d;
}

function handleFd(s: net.Socket): number {
  return (s as net.Socket & { _handle?: { fd?: number } })._handle?.fd ?? -1;
}

describe('fd passing (SCM_RIGHTS)', () => {
  // No skip: without the addon (not built, TIDEPOOL_NATIVE=0) every test here fails saying why.
  const f = new Proxy({} as NonNullable<typeof fdPassing>, {
    get: (_, k) => {
      requireAddon();
      if (!fdPassing) throw new Error('the native addon has no fdSend: rebuild it (npx node-gyp rebuild)');
      return fdPassing[k as keyof typeof fdPassing];
    },
  });

  it('a file descriptor sent with a message reads the same file on the other side; the peer uid is ours', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'payload');
    writeFileSync(file, 'handed over');
    const socketPath = path.join(dir, 's');
    let serverUid = -2;
    let sent!: () => void;
    const wasSent = new Promise<void>((r) => { sent = r; });
    const server = net.createServer((conn) => {
      serverUid = f.fdPeerUid(handleFd(conn));
      const fd = openSync(file, 'r');
      f.fdSend(handleFd(conn), Buffer.from('{"n":1}\n'), [fd]);
      closeSync(fd);
      // Resolved once the end of stream has gone too (fdReceive below blocks the loop that would send it).
      conn.end(() => sent());
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
    try {
      const sock = f.fdUnixConnect(socketPath, 5000);
      try {
        // fdReceive blocks this thread: the server (in this process) answers first.
        await wasSent;
        const got = f.fdReceive(sock);
        expect(got.data.toString()).toBe('{"n":1}\n');
        expect(got.fds).toHaveLength(1);
        const buf = Buffer.alloc(32);
        const n = readSync(got.fds[0]!, buf, 0, 32, 0);
        expect(buf.subarray(0, n).toString()).toBe('handed over');
        f.fdClose(got.fds[0]!);
        expect(f.fdReceive(sock).data.length).toBe(0);
      } finally {
        f.fdClose(sock);
      }
      expect(serverUid).toBe(process.getuid!());
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('errors carry a code; bad arguments throw before C++', () => {
    const dir = tempDir();
    expect(() => f.fdUnixConnect(path.join(dir, 'nobody'), 1000)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    expect(() => f.fdUnixConnect('x'.repeat(200), 1000)).toThrow(RangeError);
    expect(() => f.fdSend(-1, Buffer.from('x'), [])).toThrow(TypeError);
    expect(() => f.fdSend(0, Buffer.alloc(0), [])).toThrow(RangeError);
    expect(() => f.fdSend(0, Buffer.from('x'), [1.5])).toThrow(TypeError);
    expect(() => f.fdReceive(Number.NaN)).toThrow(TypeError);
    expect(() => f.fdClose(-3)).toThrow(TypeError);
  });

  it('a receive gives up after the timeout when nothing comes (EAGAIN)', async () => {
    const dir = tempDir();
    const socketPath = path.join(dir, 's');
    const held: net.Socket[] = [];
    const server = net.createServer((conn) => { held.push(conn); });
    await new Promise<void>((r) => server.listen(socketPath, r));
    try {
      const sock = f.fdUnixConnect(socketPath, 200);
      try {
        expect(() => f.fdReceive(sock)).toThrow(expect.objectContaining({ code: 'EAGAIN' }));
      } finally {
        f.fdClose(sock);
      }
    } finally {
      for (const c of held) c.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  it('fdWatch calls back when a message waits; fdReceiveNow takes it without waiting; fdSendSome and fdDup', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'payload');
    writeFileSync(file, 'moved');
    const socketPath = path.join(dir, 's');
    let conn!: net.Socket;
    const server = net.createServer();
    const accepted = new Promise<void>((r) => {
      server.once('connection', (c: net.Socket) => {
        conn = c;
        r();
      });
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
    const sock = f.fdUnixConnect(socketPath, 5000);
    try {
      await accepted;
      expect(f.fdReceiveNow(sock)).toBeUndefined();
      let calls = 0;
      const readable = new Promise<void>((r) =>
        f.fdWatch(sock, () => {
          calls++;
          r();
        }),
      );
      const fd = openSync(file, 'r');
      const copy = f.fdDup(fd);
      closeSync(fd);
      // The sender's side is Node's non-blocking socket: every byte goes at once here, the descriptor with the first.
      expect(f.fdSendSome(handleFd(conn), Buffer.from('abc'), [copy])).toBe(3);
      f.fdClose(copy);
      await readable;
      f.fdUnwatch(sock);
      expect(calls).toBeGreaterThanOrEqual(1);
      const got = f.fdReceiveNow(sock)!;
      expect(got.data.toString()).toBe('abc');
      expect(got.fds).toHaveLength(1);
      const buf = Buffer.alloc(16);
      expect(buf.subarray(0, readSync(got.fds[0]!, buf, 0, 16, 0)).toString()).toBe('moved');
      f.fdClose(got.fds[0]!);
      expect(f.fdReceiveNow(sock)).toBeUndefined();
    } finally {
      f.fdClose(sock);
      conn?.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
