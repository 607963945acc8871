// The least a search through a proxy can cost on this stack: two processes that do no search work at all.
//   node dist/bench/stack-floor.js store          a grpc-js server with one bidirectional bytes method: every message
//                                                 (4-byte id, 1-byte row) is answered with that row's bytes.
//   node dist/bench/stack-floor.js http ADDR      a node:http server: POST /bare/ROW answers the row's bytes itself;
//                                                 POST /hop/ROW first asks the store process at ADDR for them over one
//                                                 long-lived call (as the proxy's Session), then answers them.
// Both are forked with an IPC channel: each sends its port first, then takes { row, answer } messages (the answer
// as base64) and acknowledges each. The channel options are the log store's own (keepalive, flow-control window);
// the messages are raw bytes (no protobuf), so the hop is grpc-js and HTTP/2 alone.
// bench/logstore-latency.ts --stack-floor times both beside tidepool and PostgreSQL.
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { keepaliveOptions, serverOptions } from '../src/logstore/grpc/proto.js';

const bytes = (b: Buffer): Buffer => b;
const HOP: grpc.ServiceDefinition = {
  Hop: {
    path: '/tidepool.bench.Floor/Hop',
    requestStream: true,
    responseStream: true,
    originalName: 'Hop',
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  },
};
const KEEPALIVE = [30_000, 10_000] as const;

function takeAnswers(answers: Map<number, Buffer>): void {
  process.on('message', (m: { row: number; answer: string }) => {
    answers.set(m.row, Buffer.from(m.answer, 'base64'));
    process.send!({ ack: m.row });
  });
}

function storeRole(): void {
  const answers = new Map<number, Buffer>();
  takeAnswers(answers);
  const server = new grpc.Server(serverOptions(...KEEPALIVE));
  server.addService(HOP, {
    Hop: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (m: Buffer) => {
        const answer = answers.get(m[4]!) ?? Buffer.alloc(0);
        const out = Buffer.allocUnsafe(4 + answer.length);
        m.copy(out, 0, 0, 4);
        answer.copy(out, 4);
        call.write(out);
      });
      call.on('end', () => call.end());
    },
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    process.send!({ port });
  });
}

function httpRole(storeAddr: string): void {
  const answers = new Map<number, Buffer>();
  takeAnswers(answers);
  const Client = grpc.makeGenericClientConstructor(HOP, 'Floor');
  const client = new Client(storeAddr, grpc.credentials.createInsecure(), keepaliveOptions(...KEEPALIVE));
  const call = (client as unknown as { Hop(): grpc.ClientDuplexStream<Buffer, Buffer> }).Hop();
  const waiting = new Map<number, (b: Buffer) => void>();
  let nextId = 0;
  call.on('data', (m: Buffer) => {
    const id = m.readUInt32LE(0);
    const w = waiting.get(id);
    waiting.delete(id);
    w?.(m.subarray(4));
  });
  call.on('error', (err) => {
    process.stderr.write(`stack floor: the hop failed: ${err.message}\n`);
    process.exit(1);
  });
  const server = http.createServer((req, res) => {
    const [, kind, row] = (req.url ?? '').split('/');
    const body: Buffer[] = [];
    req.on('data', (c: Buffer) => body.push(c));
    req.on('end', () => {
      const reply = (b: Buffer) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': b.length });
        res.end(b);
      };
      if (kind === 'bare') return reply(answers.get(Number(row)) ?? Buffer.alloc(0));
      const id = (nextId = (nextId + 1) >>> 0);
      const m = Buffer.allocUnsafe(5);
      m.writeUInt32LE(id, 0);
      m[4] = Number(row);
      waiting.set(id, reply);
      call.write(m);
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === 'store') storeRole();
  else if (process.argv[2] === 'http' && process.argv[3]) httpRole(process.argv[3]);
  else throw new Error('usage: stack-floor.js store | http ADDR');
}

export interface StackFloor {
  /** The node:http process's port (POST /bare/ROW, /hop/ROW). */
  port: number;
  /** Both processes (the grpc-js server first), for CPU accounting. */
  pids: number[];
  /** Gives both processes a row's answer bytes. */
  setAnswer(row: number, answer: Buffer): Promise<void>;
  stop(): Promise<void>;
}

function firstMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve(m as T));
    child.once('exit', (c) => reject(new Error(`stack floor process exited ${c}`)));
  });
}

/** Forks the two processes and waits until both listen. */
export async function startStackFloor(): Promise<StackFloor> {
  const script = fileURLToPath(import.meta.url);
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const c of children.reverse()) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await exited;
    }
  };
  try {
    const store = fork(script, ['store'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(store);
    const { port: storePort } = await firstMessage<{ port: number }>(store);
    const front = fork(script, ['http', `127.0.0.1:${storePort}`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(front);
    const { port } = await firstMessage<{ port: number }>(front);
    return {
      port,
      pids: [store.pid!, front.pid!],
      async setAnswer(row, answer) {
        await Promise.all(
          [store, front].map((c) => {
            const acked = firstMessage(c);
            c.send({ row, answer: answer.toString('base64') });
            return acked;
          }),
        );
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
