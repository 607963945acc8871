// Logger factory: pino loggers with a `target` field, logfmt or JSON lines, level changeable at run time.
import { Writable } from 'node:stream';
import pino, { type Logger, type LevelWithSilent } from 'pino';

export type LogFormat = 'logfmt' | 'json';
export type LogRecord = { level: number; time: number; target?: string; msg?: string; [k: string]: unknown };
/** Gets every record as it is written: parsed, and the JSON line pino wrote (without its newline). */
export type LogSink = (record: LogRecord, line: string) => void;

const LEVEL_NAMES: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

export function levelName(level: number): string {
  return LEVEL_NAMES[level] ?? String(level);
}

function logfmtValue(v: unknown): string {
  const s = typeof v === 'string' ? v : v instanceof Object ? JSON.stringify(v) : String(v);
  return s === '' || /[\s"=]/.test(s) ? JSON.stringify(s) : s;
}

/** One logfmt line: time, level, target, msg first, then the other fields in order. */
export function formatLogfmt(rec: LogRecord): string {
  const parts = [`time=${new Date(rec.time).toISOString()}`, `level=${levelName(rec.level)}`];
  if (rec.target !== undefined) parts.push(`target=${logfmtValue(rec.target)}`);
  if (rec.msg !== undefined) parts.push(`msg=${logfmtValue(rec.msg)}`);
  for (const [k, v] of Object.entries(rec)) {
    if (
      k === 'time' ||
      k === 'level' ||
      k === 'target' ||
      k === 'msg' ||
      k === 'pid' ||
      k === 'hostname' ||
      v === undefined
    )
      continue;
    parts.push(`${k}=${logfmtValue(v)}`);
  }
  return parts.join(' ');
}

/** Logfmt lines: `target=... key=value ...` with the message fields in the order they were logged. */
export function formatAccessLogfmt(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .map(([k, v]) => `${k}=${logfmtValue(v)}`)
    .join(' ');
}

export class LogHub {
  readonly root: Logger;
  private readonly children = new Map<string, Logger>();
  private readonly sinks = new Set<LogSink>();

  constructor(opts: { level?: LevelWithSilent; format?: LogFormat; out?: NodeJS.WritableStream } = {}) {
    const out = opts.out ?? process.stderr;
    this.format = opts.format ?? 'logfmt';
    const hub = this;
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        hub.dispatch(chunk.toString('utf8'), out);
        cb();
      },
    });
    this.root = pino({ level: opts.level ?? 'info', base: undefined }, stream);
  }

  format: LogFormat;

  private dispatch(text: string, out: NodeJS.WritableStream): void {
    for (const line of text.split('\n')) {
      if (!line) continue;
      if (this.format === 'json' && this.sinks.size === 0) {
        out.write(line + '\n');
        continue;
      }
      let rec: LogRecord;
      try {
        rec = JSON.parse(line) as LogRecord;
      } catch (err) {
        out.write(`${line} (unparsable log record: ${(err as Error).message})\n`);
        continue;
      }
      for (const sink of this.sinks) sink(rec, line);
      out.write((this.format === 'json' ? line : formatLogfmt(rec)) + '\n');
    }
  }

  /** A logger whose records carry `target`; the same object for the same target. */
  get(target: string): Logger {
    let l = this.children.get(target);
    if (!l) {
      l = this.root.child({ target });
      l.level = this.root.level;
      this.children.set(target, l);
    }
    return l;
  }

  get level(): string {
    return this.root.level;
  }

  set level(level: string) {
    this.root.level = level;
    for (const c of this.children.values()) c.level = level;
  }

  addSink(sink: LogSink): () => void {
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
  }
}
