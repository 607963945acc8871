// The admin console: PgBouncer-style commands over the simple query protocol on database tidepool/pgbouncer.
import { LOG_LEVELS } from '../../config/pooler.js';
import { ConfigError } from '../../config/pooler.js';
import { FrontendMessage, SqlState, TxStatus } from '../../protocol/codes.js';
import { parseQuery } from '../../protocol/reader.js';
import {
  writeCommandComplete,
  writeDataRow,
  writeEmptyQueryResponse,
  writeErrorResponse,
  writeNoticeResponse,
  writeReadyForQuery,
  writeRowDescription,
} from '../../protocol/writer.js';
import type { ClientSession } from '../client-session.js';
import { PoolNotFoundError, type AdminHost, type ShowTable } from '../control.js';
import { NotConfiguredError, UnknownShowError } from './show.js';
import { interner, resetInterner } from './show-prepared.js';

class AdminError extends Error {
  constructor(
    readonly sqlstate: string,
    message: string,
  ) {
    super(message);
  }
}

function cell(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean') return v ? '1' : '0';
  return String(v);
}

export function encodeTable(t: ShowTable, tag = 'SHOW'): Buffer {
  return Buffer.concat([
    writeRowDescription(t.columns),
    ...t.rows.map((r) => writeDataRow(r.map(cell))),
    writeCommandComplete(tag),
  ]);
}

/** Splits on semicolons outside quotes. */
function statements(sql: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === ';') {
      out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

function unquote(s: string): string {
  return s.replace(/^(['"])(.*)\1$/, '$2');
}

/** Runs one admin statement; returns the bytes of its result (without ReadyForQuery). */
export async function runAdminCommand(p: AdminHost, sql: string): Promise<Buffer> {
  const words = sql.trim().split(/\s+/);
  const verb = (words[0] ?? '').toUpperCase();
  const arg = words[1] !== undefined ? unquote(words[1]) : undefined;
  switch (verb) {
    case 'SHOW': {
      if (!arg) throw new AdminError(SqlState.SyntaxError, 'SHOW needs an item; try SHOW HELP');
      const name = arg.toUpperCase();
      if (name === 'INTERNER' && words[2] !== undefined) {
        const n = Number(words[2]);
        if (!Number.isInteger(n) || n < 1)
          throw new AdminError(SqlState.SyntaxError, 'SHOW INTERNER <n> takes a whole number above 0');
        return encodeTable(interner(p.snapshot({ statements: true }), n));
      }
      if (name === 'HELP') {
        const t = p.show('HELP');
        return Buffer.concat(
          t.rows
            .map((r) => writeNoticeResponse({ code: '00000', message: String(r[0]) }))
            .concat(writeCommandComplete('SHOW')),
        );
      }
      return encodeTable(p.show(name));
    }
    case 'SET': {
      const m = /^SET\s+log_level\s*(?:=|TO)\s*(\S+)\s*$/i.exec(sql.trim());
      if (!m) throw new AdminError(SqlState.SyntaxError, "only SET log_level = '<level>' is supported");
      const level = unquote(m[1]!).toLowerCase();
      if (!(LOG_LEVELS as readonly string[]).includes(level))
        throw new AdminError(SqlState.InvalidParameterValue, `log_level must be one of ${LOG_LEVELS.join(', ')}`);
      p.logs.level = level;
      return writeCommandComplete('SET');
    }
    case 'RELOAD': {
      const msg = await p.reload();
      return Buffer.concat([writeNoticeResponse({ code: '00000', message: msg }), writeCommandComplete('RELOAD')]);
    }
    case 'PAUSE':
      await p.pause(arg);
      return writeCommandComplete('PAUSE');
    case 'RESUME':
      p.resume(arg);
      return writeCommandComplete('RESUME');
    case 'RECONNECT':
      p.reconnect(arg);
      return writeCommandComplete('RECONNECT');
    case 'KILL':
      if (!arg) throw new AdminError(SqlState.SyntaxError, 'KILL needs a database name');
      p.kill(arg);
      return writeCommandComplete('KILL');
    case 'SHUTDOWN':
      setImmediate(() => void p.shutdown(true));
      return writeCommandComplete('SHUTDOWN');
    case 'RESET': {
      if (arg?.toUpperCase() !== 'INTERNER')
        throw new AdminError(SqlState.SyntaxError, 'only RESET INTERNER is supported');
      const n = resetInterner(p.pools.values());
      return Buffer.concat([
        writeNoticeResponse({ code: '00000', message: `${n} unused statement texts forgotten` }),
        writeCommandComplete('RESET'),
      ]);
    }
    default:
      throw new AdminError(SqlState.SyntaxError, `unknown admin command "${words[0] ?? ''}"; try SHOW HELP`);
  }
}

function errorOf(err: unknown): Buffer {
  if (err instanceof AdminError) return writeErrorResponse({ code: err.sqlstate, message: err.message });
  if (err instanceof UnknownShowError) return writeErrorResponse({ code: SqlState.SyntaxError, message: err.message });
  if (err instanceof NotConfiguredError)
    return writeErrorResponse({ code: SqlState.FeatureNotSupported, message: err.message });
  if (err instanceof PoolNotFoundError)
    return writeErrorResponse({ code: SqlState.InvalidCatalogName, message: err.message });
  if (err instanceof ConfigError)
    return writeErrorResponse({
      code: SqlState.InvalidParameterValue,
      message: `RELOAD failed, the old configuration stays: ${err.message}`,
    });
  return writeErrorResponse({ code: SqlState.InternalError, message: (err as Error).message });
}

/** Wires an admin client's messages to the commands; queries run one at a time, in order. */
export function attachAdminConsole(p: AdminHost, c: ClientSession): void {
  let chain: Promise<void> = Promise.resolve();
  let skipping = false;
  const log = p.logs.get('pooler::admin');
  const write = (b: Buffer) => {
    chain = chain.then(() => {
      if (!c.socket.destroyed) c.socket.write(b);
    });
  };
  c.onAdminMessage = (type, buf, start, len) => {
    if (type === FrontendMessage.Terminate) return void c.socket.end();
    if (type !== FrontendMessage.Query) {
      // Extended protocol: one error, then skip to the Sync, which gets the ReadyForQuery (as PostgreSQL does).
      if (!skipping && type !== FrontendMessage.Sync && type !== FrontendMessage.Flush) {
        skipping = true;
        write(
          writeErrorResponse({
            code: SqlState.FeatureNotSupported,
            message: 'the admin console supports only the simple query protocol',
          }),
        );
      }
      if (type === FrontendMessage.Sync) {
        skipping = false;
        write(writeReadyForQuery(TxStatus.Idle));
      }
      return;
    }
    let sql: string;
    try {
      sql = parseQuery(buf.subarray(start + 5, start + 1 + len));
    } catch (err) {
      return c.fatal(SqlState.ProtocolViolation, `malformed Query message: ${(err as Error).message}`);
    }
    chain = chain.then(async () => {
      const parts = statements(sql);
      const out: Buffer[] = [];
      if (!parts.length) out.push(writeEmptyQueryResponse());
      for (const stmt of parts) {
        try {
          log.info({ client_id: c.id, user: c.user, command: stmt.slice(0, 200) }, 'admin command');
          out.push(await runAdminCommand(p, stmt));
        } catch (err) {
          out.push(errorOf(err));
          break;
        }
      }
      out.push(writeReadyForQuery(TxStatus.Idle));
      if (!c.socket.destroyed) c.socket.write(Buffer.concat(out));
    });
  };
}
