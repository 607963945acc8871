// A client's startup parameters (params.ts startupWishes) checked and spelled by PostgreSQL itself on a pooled server before the greeting, and the startup keys the pooler refuses.
import { BackendMessage, SqlState } from '../../protocol/codes.js';
import { parseErrorFields } from '../../protocol/extended.js';
import { writeQuery } from '../../protocol/writer.js';
import type { ServerConnection } from '../server-connection.js';
import { dataRows, literal } from './params.js';

/** A startup key the pooler cannot carry to a pooled server: a replication connection is a walsender, not a session. */
export function refusedStartupKey(startupPacket: ReadonlyMap<string, string>): string | null {
  const r = startupPacket.get('replication');
  if (r !== undefined && !/^(?:false|off|no|0)$/i.test(r))
    return 'replication connections are not supported by the pooler (connect to PostgreSQL directly)';
  return null;
}

/** True when a transaction-mode login must check its wishes on a server before the greeting: anything beyond
 * application_name (any text is valid) and a client_encoding spelled as the pool's servers report it (they log in
 * with UTF8: server-login.ts). */
export function needsCheck(wishes: ReadonlyMap<string, string>, reported: ReadonlyMap<string, string>): boolean {
  for (const [n, v] of wishes) {
    if (n === 'application_name') continue;
    if (n === 'client_encoding' && v === (reported.get('client_encoding') ?? 'UTF8')) continue;
    return true;
  }
  return false;
}

/** What PostgreSQL made of the wishes: each name's value as it now reports it (`UTF8` for `utf8`), or its error. */
export type StartupCheck =
  { ok: true; values: Map<string, string> } | { ok: false; sqlstate: string; message: string; detail?: string };

/** Applies the wishes to an unlinked server with one `SELECT set_config(...)` (its replies reach no client) and
 * reports the values PostgreSQL settled on, in the client's order, or PostgreSQL's error for the first it refused
 * (the statement then changed nothing). As `ask`, `done` is never called if the server dies first. */
export function applyStartup(
  s: ServerConnection,
  wishes: ReadonlyMap<string, string>,
  done: (r: StartupCheck) => void,
): void {
  const names = [...wishes.keys()];
  const cols = names.map((n) => `pg_catalog.set_config(${literal(n)}, ${literal(wishes.get(n)!)}, false)`);
  s.end.ask(writeQuery(`SELECT ${cols.join(', ')}`), (replies, sawError) => {
    if (sawError) return done(errorOf(replies));
    const row = dataRows(replies)[0] ?? [];
    const values = new Map<string, string>();
    names.forEach((n, i) => values.set(n, row[i] ?? wishes.get(n)!));
    done({ ok: true, values });
  });
}

/** The first ErrorResponse of captured replies, as the FATAL a direct connection would have got at startup. */
function errorOf(replies: Buffer): StartupCheck {
  let pos = 0;
  while (pos + 5 <= replies.length) {
    const len = replies.readUInt32BE(pos + 1);
    if (replies[pos] === BackendMessage.ErrorResponse) {
      const f = parseErrorFields(replies.subarray(pos, pos + 1 + len));
      const sqlstate = f.get('C') ?? SqlState.ProtocolViolation;
      const detail =
        sqlstate === '55P02'
          ? 'tidepool applies startup parameters to a pooled server with set_config; one that only a new backend can take cannot be carried'
          : f.get('D');
      return { ok: false, sqlstate, message: f.get('M') ?? 'invalid startup parameter', ...(detail ? { detail } : {}) };
    }
    pos += 1 + len;
  }
  return { ok: false, sqlstate: SqlState.ProtocolViolation, message: 'invalid startup parameter' };
}
