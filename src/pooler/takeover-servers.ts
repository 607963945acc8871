// Server connections moved by a takeover (issue 38): once the new process listens (takeover.ts) and has said it takes
// servers, the old one sends it each server connection that is idle in its pool, over the same Unix socket and in the
// same frames as its clients (takeover-clients.ts): the socket (SCM_RIGHTS) with what the new process needs to pool it
// as if it had logged it in itself (its pool, backend pid and secret key, ParameterStatus values, the session
// parameters it holds, the statements prepared on it under pooler names, its age). The new process adds it to its
// pool (taken) or refuses it; a refused one is closed by the old process with a Terminate.
import { writeSync } from 'node:fs';
import { writeTerminate } from '../protocol/writer.js';
import { fdPassing } from '../native/fd-passing.js';

/** A statement prepared on a moved server under a pooler name (prepared/interner.ts Statement). */
export interface MovedServerStatement {
  name: string;
  query: Buffer;
  types: Buffer;
  /** Statement.settings as the old process keyed it (planner settings and schema epoch). */
  settings: string;
  /** Marked for a new Parse at its next use (a schema change broke its plan). */
  stale: boolean;
}

/** A server connection as it moves between processes. */
export interface MovedServer {
  /** Its pool. */
  database: string;
  user: string;
  /** Where it is connected and as whom: `host:port/database` and the server user (the new pool must say the same). */
  target: string;
  serverUser: string;
  backendPid: number;
  backendSecret: Buffer;
  /** ParameterStatus values PostgreSQL reported at its login, as spelled there. */
  params: [string, string][];
  applicationName: string;
  /** When its connect began, and when it was last released (Date.now() times): server_lifetime and idle_timeout go on
   * counting from them. */
  createdAt: number;
  lastUsed: number;
  /** The session parameters it holds (session-state/params.ts ParamValues, lower-case names), null when not read
   * yet; and names whose values are not known (read back before its next sync), or null. */
  values: [string, string][] | null;
  unknown: string[] | null;
  statements: MovedServerStatement[];
}

/** The header of a server's frame: `server` tells it from a client's. */
export interface ServerHeader {
  id: number;
  server: 1;
  database: string;
  user: string;
  target: string;
  server_user: string;
  backend_pid: number;
  backend_secret: string;
  params: [string, string][];
  application_name: string;
  created_at: number;
  last_used: number;
  values: [string, string][] | null;
  unknown: string[] | null;
  statements: { name: string; query: string; types: string; settings: string; stale: boolean }[];
}

/** One server's frame: the same layout as a client's (takeover-clients.ts), with no pending bytes. */
export function encodeServer(id: number, m: MovedServer): Buffer {
  const json = Buffer.from(JSON.stringify(serverHeader(id, m)), 'utf8');
  const head = Buffer.allocUnsafe(8);
  head.writeUInt32BE(4 + json.length, 0);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json]);
}

/** A server's header (its own frame's, or a linked client's `linked`). */
export function serverHeader(id: number, m: MovedServer): ServerHeader {
  return {
    id,
    server: 1,
    database: m.database,
    user: m.user,
    target: m.target,
    server_user: m.serverUser,
    backend_pid: m.backendPid,
    backend_secret: m.backendSecret.toString('hex'),
    params: m.params,
    application_name: m.applicationName,
    created_at: m.createdAt,
    last_used: m.lastUsed,
    values: m.values,
    unknown: m.unknown,
    statements: m.statements.map((s) => ({
      name: s.name,
      query: s.query.toString('base64'),
      types: s.types.toString('base64'),
      settings: s.settings,
      stale: s.stale,
    })),
  };
}

/** A server's header, decoded; throws on a malformed one. */
export function decodeServer(h: ServerHeader): MovedServer {
  if (
    typeof h.database !== 'string' ||
    typeof h.user !== 'string' ||
    typeof h.target !== 'string' ||
    typeof h.backend_pid !== 'number' ||
    typeof h.backend_secret !== 'string' ||
    !Array.isArray(h.params)
  )
    throw new Error('takeover: malformed server header');
  return {
    database: h.database,
    user: h.user,
    target: h.target,
    serverUser: h.server_user ?? '',
    backendPid: h.backend_pid,
    backendSecret: Buffer.from(h.backend_secret, 'hex'),
    params: h.params,
    applicationName: h.application_name ?? '',
    createdAt: typeof h.created_at === 'number' ? h.created_at : Date.now(),
    lastUsed: typeof h.last_used === 'number' ? h.last_used : Date.now(),
    values: h.values ?? null,
    unknown: h.unknown ?? null,
    statements: (h.statements ?? []).map((s) => ({
      name: s.name,
      query: Buffer.from(s.query, 'base64'),
      types: Buffer.from(s.types, 'base64'),
      settings: s.settings ?? '',
      stale: s.stale === true,
    })),
  };
}

/** A server the old process offers the mover: an idle server of a pool (Pool.moveOut). */
export interface MovableServer {
  /** Lets go of it if it is still idle and in a known state: its state and a descriptor of it, or why not. */
  moveOut(): { server: MovedServer; fd: number } | string;
}

/** The old process's copy of a server the new process refused (or did not answer for): the backend is told to end
 * (Terminate) and the descriptor closed, as a polite close would. */
export function closeMovedServer(fd: number): void {
  try {
    writeSync(fd, writeTerminate());
  } catch {
    // The connection is gone already: closing is all there is to do.
  }
  fdPassing?.fdClose(fd);
}
