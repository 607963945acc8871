// The relay twins against the shared vectors (test/fixtures/relay-vectors.ts): the JavaScript relay's accounting
// (FrameStream + TransactionTracker, composed as client-session.ts and server-connection.ts compose them) and the
// native relay's scan (native/relay-scan.h through relayScan), on the vectors' reads and on every other cut.
import { describe, expect, it } from 'vitest';
import { FrameStream, typeSet } from '../../../src/protocol/frame-stream.js';
import { TransactionTracker } from '../../../src/pooler/transaction-tracker.js';
import { FRONTEND_TYPES } from '../../../src/pooler/relay/js-client.js';
import {
  RELAY_VECTORS,
  type RelayVector,
  type Side,
  type Step,
  type StepExpect,
  type Twin,
} from '../../fixtures/relay-vectors.js';
import { requireAddon } from '../../helpers/native.js';

type TwinName = 'js' | 'native';

/** What a relay concluded from one step's reads. */
interface Seen {
  headers: string[];
  ready: { status: string; ended: boolean; release: boolean }[];
  syncs: number;
  unsynced: boolean;
  copyIn: boolean;
  queries: number;
  terminateAt?: number;
  badLength?: number;
}

interface Relay {
  /** Feeds one read; false once the stream is dead (Terminate or a bad length). */
  feed(side: Side, read: Buffer, seen: Seen): boolean;
  state(): Pick<Seen, 'syncs' | 'unsynced' | 'copyIn' | 'queries'>;
}

/** Tracks each side's stream offsets; every header must start where the previous message ended. */
class Offsets {
  /** Where the next message of each side must start. */
  readonly next = { client: 0, server: 0 };
  /** Bytes of each side fed so far: the offset of the next read. */
  readonly read = { client: 0, server: 0 };

  /** Records a header at `at` (an offset in the side's stream) of a message of `length` (counting itself). */
  header(side: Side, type: number, at: number, length: number, seen: Seen): void {
    expect(
      at,
      `${String.fromCharCode(type)} header at ${at} where the previous ${side} message ended at ${this.next[side]}`,
    ).toBe(this.next[side]);
    this.next[side] = at + 1 + length;
    seen.headers.push(`${String.fromCharCode(type)}@${at}`);
  }
}

const ZERO = 'Z'.charCodeAt(0);

/** The JavaScript relay: the same FrameStream settings and tracker calls as client-session.ts / server-connection.ts. */
class JsRelay implements Relay {
  private readonly tx = new TransactionTracker();
  private readonly offsets = new Offsets();
  private seen: Seen | null = null;
  private chunk: Buffer | null = null;
  private readonly client: FrameStream;
  private readonly server: FrameStream;
  private badType = -1;

  constructor(maxMessageSize: number) {
    this.client = new FrameStream(maxMessageSize, typeSet(0x58), (type, buf, start, len) => {
      // js-client.ts: the first type no server takes stops the stream; nothing after it is looked at.
      if (!FRONTEND_TYPES[type] || this.badType >= 0) {
        if (this.badType < 0) this.badType = type;
        return;
      }
      if (this.tx.terminateAt < 0) this.offsets.header('client', type, this.at('client', buf, start), len, this.seen!);
      this.tx.onMessage(type, buf, start);
    });
    // server-connection.ts: messages up to 1 GiB, ReadyForQuery delivered whole.
    this.server = new FrameStream(1 << 30, typeSet(ZERO), (type, buf, start, len) => {
      this.offsets.header('server', type, this.at('server', buf, start), len, this.seen!);
      if (type === ZERO) {
        const status = buf[start + 5]!;
        this.tx.readyForQuery(performance.now());
        const ended = this.tx.between(status);
        // client-session.ts onReadyForQuery: released only between whole client messages.
        this.seen!.ready.push({ status: String.fromCharCode(status), ended, release: ended && this.client.atBoundary });
      } else if (type === 0x47) this.tx.copyIn = true;
    });
  }

  /** Stream offset of a header: in this read at `start`, or (from FrameStream's carry) where the last message ended. */
  private at(side: Side, buf: Buffer, start: number): number {
    return buf === this.chunk ? this.offsets.read[side] + start : this.offsets.next[side];
  }

  feed(side: Side, read: Buffer, seen: Seen): boolean {
    this.seen = seen;
    this.chunk = read;
    try {
      if (side === 'server') {
        if (!this.server.feed(read)) {
          seen.badLength = this.server.badLength >>> 0;
          return false;
        }
        return true;
      }
      // client-session.ts onRelayData.
      const tx = this.tx;
      tx.terminateAt = -1;
      tx.chunk = read;
      const midMessage = !this.client.atBoundary;
      if (!this.client.feed(read) || this.badType >= 0) {
        if (midMessage) tx.unsynced = true;
        seen.badLength = (this.badType >= 0 ? -1 - this.badType : this.client.badLength) >>> 0;
        return false;
      }
      if (tx.terminateAt >= 0) {
        const x = seen.headers.find((h) => h.startsWith('X@'));
        seen.terminateAt = Number(x!.slice(2));
        return false;
      }
      return true;
    } finally {
      this.offsets.read[side] += read.length;
    }
  }

  state() {
    return { syncs: this.tx.syncs, unsynced: this.tx.unsynced, copyIn: this.tx.copyIn, queries: this.tx.queryCount };
  }
}

type RelayScan = (state: Int32Array, side: number, chunk: Uint8Array, out: Int32Array) => number;

/** Slots of relayScan's state (native/relay.cc ScanState). */
const S = { syncs: 20, unsynced: 21, copyIn: 22, queries: 23, txStatus: 24, clientMax: 25, serverMax: 26, length: 27 };

/** The native relay's own scan (relay-stream.cc runs every read through the same functions). */
class NativeRelay implements Relay {
  private readonly scan: RelayScan;
  private readonly st = new Int32Array(S.length);
  private readonly out = new Int32Array(4 + 4 * 1024);
  private readonly offsets = new Offsets();

  constructor(maxMessageSize: number) {
    this.scan = requireAddon()['relayScan'] as RelayScan;
    expect(typeof this.scan, 'the addon exports relayScan (rebuild it: npx node-gyp rebuild)').toBe('function');
    this.st[S.clientMax] = maxMessageSize;
    // The relay adopts servers with a limit of 2^31 - 1 bytes per message (adoptServer).
    this.st[S.serverMax] = 0x7fffffff;
    this.st[S.txStatus] = 'I'.charCodeAt(0);
  }

  feed(side: Side, read: Buffer, seen: Seen): boolean {
    const n = this.scan(this.st, side === 'server' ? 1 : 0, read, this.out);
    expect(n).toBeLessThanOrEqual((this.out.length - 4) / 4);
    const base = this.offsets.read[side];
    for (let i = 0, e = 4; i < n; i++, e += 4) {
      const [kind, a, b, c] = [this.out[e]!, this.out[e + 1]!, this.out[e + 2]!, this.out[e + 3]!];
      if (kind === 1) this.offsets.header(side, a, base + b, c, seen);
      else seen.ready.push({ status: String.fromCharCode(a), ended: b === 1, release: c === 1 });
    }
    this.offsets.read[side] += read.length;
    const status = this.out[0];
    if (status === 1) {
      seen.badLength = this.out[2]! >>> 0;
      return false;
    }
    if (status === 2) {
      seen.terminateAt = base + this.out[1]!;
      return false;
    }
    return true;
  }

  state() {
    return {
      syncs: this.st[S.syncs]!,
      unsynced: this.st[S.unsynced] === 1,
      copyIn: this.st[S.copyIn] === 1,
      queries: this.st[S.queries]!,
    };
  }
}

const pick = <T>(v: Twin<T>, twin: TwinName): T => (typeof v === 'object' && v !== null && 'why' in v ? v[twin] : v);

function expected(e: StepExpect, twin: TwinName): Seen {
  const out: Seen = {
    headers: e.headers,
    ready: (e.ready ?? []).map((r) => ({ status: r.status, ended: r.ended, release: pick(r.release, twin) })),
    syncs: e.syncs,
    unsynced: pick(e.unsynced, twin),
    copyIn: e.copyIn,
    queries: e.queries,
  };
  if (e.terminateAt !== undefined) out.terminateAt = e.terminateAt;
  if (e.badLength !== undefined) out.badLength = e.badLength;
  return out;
}

/** Runs the steps (each as `reads(step)` cuts it) and checks each against its expectation. */
function run(v: RelayVector, twin: TwinName, reads: (s: Step) => Buffer[], label: string): void {
  const relay: Relay = twin === 'js' ? new JsRelay(v.maxMessageSize) : new NativeRelay(v.maxMessageSize);
  v.steps.forEach((step, i) => {
    const seen: Seen = { headers: [], ready: [], syncs: 0, unsynced: false, copyIn: false, queries: 0 };
    let alive = true;
    for (const read of reads(step)) {
      expect(alive, `${label}, step ${i + 1}: bytes after the stream stopped`).toBe(true);
      alive = relay.feed(step.from, read, seen);
    }
    Object.assign(seen, relay.state());
    expect(seen, `${label}, step ${i + 1} (${step.from})`).toEqual(expected(step.expect, twin));
  });
}

const asGiven = (s: Step) => s.reads;
const cutAt = (n: number) => (s: Step) => {
  const all = Buffer.concat(s.reads);
  return n < all.length ? [all.subarray(0, n), all.subarray(n)] : [all];
};
const byteByByte = (s: Step) => [...Buffer.concat(s.reads)].map((b) => Buffer.from([b]));

describe.each(['js', 'native'] as const)('relay vectors: %s relay', (twin) => {
  it.each(RELAY_VECTORS.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    run(v, twin, asGiven, 'as given');
    if (!v.anySplit) return;
    run(v, twin, byteByByte, 'byte by byte');
    const longest = Math.max(...v.steps.map((s) => Buffer.concat(s.reads).length));
    for (let n = 1; n < longest; n++) run(v, twin, cutAt(n), `every step cut at ${n}`);
  });
});

describe('relay vectors', () => {
  it('cover the cases both relays must agree on', () => {
    const all = RELAY_VECTORS.flatMap((v) => v.steps.map((s) => s.expect));
    expect(all.some((e) => e.terminateAt !== undefined)).toBe(true);
    expect(all.some((e) => e.badLength !== undefined)).toBe(true);
    expect(all.some((e) => e.copyIn)).toBe(true);
    expect(all.some((e) => e.ready?.some((r) => r.ended) && e.ready.some((r) => !r.ended))).toBe(true);
    expect(RELAY_VECTORS.filter((v) => v.anySplit).length).toBeGreaterThanOrEqual(10);
  });
});
