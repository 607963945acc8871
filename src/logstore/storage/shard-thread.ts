// The threads of a store's shards: one worker per shard, tasks over a message port, and one shared wake word
// for all of them, so that a search reaches every shard with a single wake-up (see ShardThreads.all).
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import type { Logger } from 'pino';

/** What a shard thread is started with: its port, the shared wake word, and the shard's own data. */
export interface ThreadData<T> {
  port: MessagePort;
  wake: Int32Array;
  data: T;
}

/** A task to a shard thread, and its answer. */
export interface TaskMessage {
  id: number;
  name: string;
  task: unknown;
}

export interface AnswerMessage {
  id: number;
  result?: unknown;
  error?: { name: string; message: string; stack?: string };
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/** One shard's thread: when it dies its pending tasks fail, and the next task starts it again (reopening its shard). */
class ShardThread<T> {
  private worker!: Worker;
  private port!: MessagePort;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closing = false;
  private dead = false;

  constructor(private readonly file: string, private readonly data: T, private readonly wake: Int32Array, private readonly youngMb: number, private readonly log?: Logger) {
    this.start();
  }

  private start(): void {
    const { port1, port2 } = new MessageChannel();
    const workerData: ThreadData<T> = { port: port2, wake: this.wake, data: this.data };
    const worker = new Worker(this.file, { workerData, transferList: [port2], resourceLimits: { maxYoungGenerationSizeMb: this.youngMb } });
    // Neither the thread nor its port keeps the process alive while no task is pending.
    worker.unref();
    this.worker = worker;
    this.port = port1;
    port1.on('message', (m: AnswerMessage) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error) p.reject(Object.assign(new Error(m.error.message), { name: m.error.name, stack: m.error.stack }));
      else p.resolve(m.result);
      if (this.pending.size === 0) this.port.unref();
    });
    port1.unref();
    const fail = (err: Error) => {
      if (this.worker !== worker) return;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      if (this.closing) return;
      this.log?.error({ err }, 'shard thread died; it is started again by the next task');
      port1.close();
      // Started again lazily: a shard that cannot open (its constructor throws) fails each task, not a busy loop.
      this.dead = true;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`shard thread exited with code ${code}`)));
  }

  /** Queues a task on the port; the caller wakes the thread (ShardThreads.wake). */
  post<R>(name: string, task: unknown, transfer: ArrayBuffer[] = []): Promise<R> {
    if (this.dead) {
      this.dead = false;
      this.start();
    }
    const id = this.nextId++;
    const answer = new Promise<R>((resolve, reject) => this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject }));
    if (this.pending.size === 1) this.port.ref();
    const msg: TaskMessage = { id, name, task };
    try {
      this.port.postMessage(msg, transfer);
    } catch (err) {
      this.pending.get(id)!.reject(err as Error);
      this.pending.delete(id);
    }
    return answer;
  }

  async terminate(): Promise<void> {
    this.closing = true;
    await this.worker.terminate();
    this.port.close();
  }
}

/**
 * Every shard thread of a store. Each waits (Atomics.wait) on one shared word; a task is posted to the
 * thread's port and the word bumped and notified. A search posts to every shard first and then wakes them
 * all with one notify: one system call, so the first thread woken cannot take the CPU from this one before
 * the others have been told (with a wake-up per thread, a busy 2-core machine ran the shards one after
 * another). A thread that finds nothing on its port waits again.
 */
export class ShardThreads<T> {
  private readonly wakeWord = new Int32Array(new SharedArrayBuffer(4));
  private readonly threads: ShardThread<T>[];

  constructor(file: string, data: T[], youngMb: number, log?: Logger) {
    this.threads = data.map((d) => new ShardThread(file, d, this.wakeWord, youngMb, log));
  }

  get length(): number {
    return this.threads.length;
  }

  private wake(): void {
    Atomics.add(this.wakeWord, 0, 1);
    Atomics.notify(this.wakeWord, 0);
  }

  /** Runs a task on one shard (its buffers in `transfer` are moved, not copied). */
  run<R>(shard: number, name: string, task: unknown, transfer: ArrayBuffer[] = []): Promise<R> {
    const answer = this.threads[shard]!.post<R>(name, task, transfer);
    this.wake();
    return answer;
  }

  /** Runs the same task on every shard; their answers in shard order. */
  all<R>(name: string, task: unknown): Promise<R[]> {
    const answers = this.threads.map((t) => t.post<R>(name, task));
    this.wake();
    return Promise.all(answers);
  }

  /** As all(), waiting for every shard even when some fail. */
  allSettled<R>(name: string, task: unknown): Promise<PromiseSettledResult<R>[]> {
    const answers = this.threads.map((t) => t.post<R>(name, task));
    this.wake();
    return Promise.allSettled(answers);
  }

  async terminate(): Promise<void> {
    await Promise.allSettled(this.threads.map((t) => t.terminate()));
  }
}

/** A handler's answer whose buffers are moved to the calling thread, not copied. */
export class Moved {
  constructor(readonly value: unknown, readonly transfer: ArrayBuffer[]) {}
}

export type TaskHandlers = Record<string, (task: never) => unknown>;

/**
 * The loop of a shard thread: wait on the wake word, then run every task queued on the port, in order. The
 * handlers are synchronous (a shard is), so the thread's event loop only runs when log lines wait to reach
 * the main thread, or between bursts of tasks.
 */
export function serveTasks(port: MessagePort, wake: Int32Array, handlers: TaskHandlers): void {
  let seen = Atomics.load(wake, 0);
  const answer = (m: TaskMessage): void => {
    try {
      const handler = handlers[m.name];
      if (!handler) throw new Error(`shard thread: no task named ${m.name}`);
      const r = handler(m.task as never);
      if (r instanceof Moved) port.postMessage({ id: m.id, result: r.value } satisfies AnswerMessage, r.transfer);
      else port.postMessage({ id: m.id, result: r } satisfies AnswerMessage);
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      port.postMessage({ id: m.id, error: { name: e.name, message: e.message, stack: e.stack } } satisfies AnswerMessage);
    }
  };
  const loop = (): void => {
    for (;;) {
      let entry;
      while ((entry = receiveMessageOnPort(port)) !== undefined) answer(entry.message as TaskMessage);
      // Log lines travel to the main thread through this thread's event loop: let it run until they are out.
      if (process.stdout.writableLength > 0 || process.stderr.writableLength > 0) {
        const stream = process.stdout.writableLength > 0 ? process.stdout : process.stderr;
        stream.write('', () => setImmediate(loop));
        return;
      }
      Atomics.wait(wake, 0, seen);
      seen = Atomics.load(wake, 0);
    }
  };
  loop();
}
