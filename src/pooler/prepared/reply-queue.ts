// The replies a client is owed, in the order PostgreSQL sends them: which reply completes what, the pooler's own replies in their place, and the skip to Sync after an error.
import { BackendMessage } from '../../protocol/codes.js';
import { parseCommandTag, parseErrorFields, writeErrorFields } from '../../protocol/extended.js';
import type { Statement } from './interner.js';

/** Where rewritten bytes go. */
export interface RewriteSink {
  toServer(buf: Buffer): void;
  toClient(buf: Buffer): void;
}

export const OWN: readonly number[] = [];
export const PARSED = [BackendMessage.ParseComplete];
export const BOUND = [BackendMessage.BindComplete];
export const CLOSED = [BackendMessage.CloseComplete];
export const DESCRIBED = [BackendMessage.RowDescription, BackendMessage.NoData];
export const EXECUTED = [
  BackendMessage.CommandComplete,
  BackendMessage.EmptyQueryResponse,
  BackendMessage.PortalSuspended,
];
export const READY = [BackendMessage.ReadyForQuery];

/** What a server reply belongs to, in the order PostgreSQL answers; `ends` is the reply type that completes it. */
export interface Slot {
  /** Reply types that complete it (ErrorResponse is handled apart); empty for a reply the pooler gives itself. */
  ends: readonly number[];
  /** The pooler's own reply, sent when the slot reaches the head of the queue. */
  reply?: Buffer;
  /** The pooler inserted the message: its reply is not the client's (an ErrorResponse still is). */
  drop?: boolean;
  /** Simple Query and FunctionCall: errors do not start a skip, and the slot lasts until ReadyForQuery. */
  simple?: boolean;
  /** Extended-query Sync: where PostgreSQL stops skipping after an error. */
  sync?: boolean;
  onOk?: () => void;
  /** Takes back what sending the message assumed: PostgreSQL refused it (`skipped` false) or skipped it after an earlier error. */
  undo?: (skipped: boolean) => void;
  /** A server-side name in the error text to show as the client's. */
  rename?: [from: string, to: string];
  /** Simple Query: a CommandComplete tag seen. */
  onTag?: (tag: string) => void;
  /** Simple Query the pooler answers itself: the EmptyQueryResponse of the empty query sent instead becomes this. */
  emptyAs?: Buffer;
  /** Simple Query: PostgreSQL reported an error (its ReadyForQuery then ends the slot without `onOk`). */
  failed?: boolean;
  /** Error fields added by the pooler's own stand-in command, removed so the error reads as PostgreSQL's. */
  strip?: readonly string[];
  /** Position in its group of the client message that made the slot, and the statement it used (see the rewriter's retry). */
  at?: number;
  statement?: Statement;
}

/** Asked about an ErrorResponse to an extended message: true takes it over (the client never sees it, nor the ReadyForQuery of its Sync). */
export type RetryHook = (slot: Slot, error: Buffer, delivered: boolean) => boolean;

export class ReplyQueue {
  private readonly slots: Slot[] = [];
  private head = 0;
  /** PostgreSQL refused an extended message and skips the client's messages until its next Sync. */
  skipping = false;
  /** A server reply of the group at the head went to the client (the pooler's own replies do not count). */
  private delivered = false;
  /** The pooler's own replies wait (the rewriter rebuilds slots of messages the native lane sent: see `fastForward`). */
  holdOwn = false;

  /** `groupDone`: a Sync, Query or FunctionCall was answered. */
  constructor(
    private readonly groupDone: (out: RewriteSink) => void,
    private readonly retry: RetryHook,
  ) {}

  /** A server reply is awaited (the pooler's own replies at the head have gone out already). */
  get awaitingServer(): boolean {
    return this.head < this.slots.length;
  }

  /** Every awaited reply has come, and PostgreSQL is not skipping. */
  get settled(): boolean {
    return this.head === this.slots.length && !this.skipping;
  }

  /** Adds a slot behind the others (the pooler's own reply goes out when it reaches the head). */
  add(slot: Slot): void {
    this.slots.push(slot);
  }

  /** Adds a slot and sends the pooler's own replies that are at the head now. */
  push(slot: Slot, out: RewriteSink): void {
    this.slots.push(slot);
    this.flushReplies(out);
  }

  /** A whole server message that may complete a slot (see `needsWhole`); everything else passes by. */
  serverMessage(type: number, msg: Buffer, out: RewriteSink): void {
    const slot = this.slots[this.head];
    if (
      !slot ||
      type === BackendMessage.NoticeResponse ||
      type === BackendMessage.ParameterStatus ||
      type === BackendMessage.NotificationResponse
    ) {
      out.toClient(msg);
      return;
    }
    if (type === BackendMessage.ErrorResponse && !slot.simple) return this.onExtendedError(slot, msg, out);
    if (!slot.drop) this.delivered = true;
    if (slot.simple) {
      if (type === BackendMessage.ErrorResponse) {
        slot.failed = true;
        slot.undo?.(false);
        out.toClient(this.clientError(slot, msg));
      } else {
        if (type === BackendMessage.CommandComplete && slot.onTag) slot.onTag(parseCommandTag(msg));
        if (!slot.drop) out.toClient(type === BackendMessage.EmptyQueryResponse && slot.emptyAs ? slot.emptyAs : msg);
      }
    } else if (!slot.drop) out.toClient(msg);
    if (slot.ends.includes(type)) {
      this.head++;
      if (!slot.failed) slot.onOk?.();
      if (slot.sync || slot.simple) {
        this.delivered = false;
        this.groupDone(out);
      }
      this.flushReplies(out);
    }
  }

  /** The error as the client should read it: the client's statement name in place of the pooler's, no traces of a stand-in command. */
  private clientError(slot: Slot, msg: Buffer): Buffer {
    if (!slot.rename && !slot.strip) return msg;
    const fields = parseErrorFields(msg);
    if (slot.rename) {
      const [from, to] = slot.rename;
      for (const code of ['M', 'D']) {
        const text = fields.get(code);
        if (text !== undefined) fields.set(code, text.replace(`"${from}"`, `"${to}"`));
      }
    }
    for (const code of slot.strip ?? []) fields.delete(code);
    return writeErrorFields(BackendMessage.ErrorResponse, fields);
  }

  private onExtendedError(slot: Slot, msg: Buffer, out: RewriteSink): void {
    // PostgreSQL skips to the next Sync: nothing up to it is answered, and nothing it assumed happened.
    let i = this.head;
    while (i < this.slots.length && !this.slots[i]!.sync) i++;
    if (i < this.slots.length && this.retry(slot, msg, this.delivered)) this.slots[i]!.drop = true;
    else out.toClient(this.clientError(slot, msg));
    for (let j = i - 1; j >= this.head; j--) this.slots[j]!.undo?.(j > this.head);
    this.head = i;
    if (i === this.slots.length) this.skipping = true;
    this.compact();
  }

  /** The native lane delivered the first `n` replies of the head group itself (the pooler's own ones included). */
  fastForward(n: number, out: RewriteSink): void {
    for (let i = 0; i < n && this.head < this.slots.length; i++) {
      const slot = this.slots[this.head++]!;
      if (slot.ends !== OWN && !slot.drop) this.delivered = true;
      slot.onOk?.();
    }
    this.flushReplies(out);
  }

  /** Sends the pooler's own replies that have reached the head of the queue. */
  private flushReplies(out: RewriteSink): void {
    if (this.holdOwn) return;
    while (this.head < this.slots.length && this.slots[this.head]!.ends === OWN) {
      const slot = this.slots[this.head++]!;
      out.toClient(slot.reply!);
      slot.onOk?.();
    }
    this.compact();
  }

  private compact(): void {
    if (this.head === this.slots.length) {
      this.slots.length = 0;
      this.head = 0;
    }
  }
}

/** Server message types the rewriter must see whole; the rest pass through without a look. */
export const REWRITER_WHOLE_TYPES = [
  BackendMessage.ParseComplete,
  BackendMessage.BindComplete,
  BackendMessage.CloseComplete,
  BackendMessage.ErrorResponse,
  BackendMessage.ReadyForQuery,
  BackendMessage.CommandComplete,
  BackendMessage.EmptyQueryResponse,
  BackendMessage.RowDescription,
  BackendMessage.NoData,
  BackendMessage.PortalSuspended,
] as const;
