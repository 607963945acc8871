// A scripted PostgreSQL backend built from our own protocol writer, for fault injection only
// (a backend that dies mid-result); real behaviour is always tested against the real server.
import net from 'node:net';
import {
  writeAuthenticationOk,
  writeBackendKeyData,
  writeCommandComplete,
  writeDataRow,
  writeParameterStatus,
  writeReadyForQuery,
  writeRowDescription,
} from '../../src/protocol/writer.js';

export interface FakeBackend {
  port: number;
  close(): Promise<void>;
}

/** Logs anyone in (trust); answers each Query per `onQuery(sql, socket)`. */
export async function startFakeBackend(onQuery: (sql: string, socket: net.Socket) => void): Promise<FakeBackend> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let started = false;
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (!started) {
          if (buf.length < 4 || buf.length < buf.readInt32BE(0)) return;
          buf = buf.subarray(buf.readInt32BE(0));
          started = true;
          s.write(
            Buffer.concat([
              writeAuthenticationOk(),
              writeParameterStatus('server_version', '16.0'),
              writeBackendKeyData(4242, Buffer.from([1, 2, 3, 4])),
              writeReadyForQuery(0x49),
            ]),
          );
          continue;
        }
        if (buf.length < 5 || buf.length < 1 + buf.readInt32BE(1)) return;
        const type = buf[0];
        const len = buf.readInt32BE(1);
        const body = buf.subarray(5, 1 + len);
        buf = buf.subarray(1 + len);
        if (type === 0x51) onQuery(body.toString('utf8', 0, body.length - 1), s);
        if (type === 0x58) s.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export const fakeResult = {
  rowDescription: writeRowDescription,
  dataRow: writeDataRow,
  commandComplete: writeCommandComplete,
  readyForQuery: () => writeReadyForQuery(0x49),
};
