// The two moments a server's parameters are handled: read back after a client's transaction that may have changed one, synced before a transaction.
import { writeParameterStatus, writeQuery } from '../../protocol/writer.js';
import type { ServerConnection } from '../server-connection.js';
import {
  applyReadBack,
  dataRows,
  effectsOf,
  ParamValues,
  readBackNames,
  readBackQuery,
  syncQuery,
  type ClientParams,
  type ParamChanges,
} from './params.js';

/** What the server holds: known from its login until a read-back says more. */
export function serverValues(s: ServerConnection, tracked: readonly string[]): ParamValues {
  s.paramValues ??= ParamValues.fromReported(s.params, tracked, s.applicationName);
  return s.paramValues;
}

function reportedNames(s: ServerConnection): Set<string> {
  return new Set([...s.params.keys()].map((k) => k.toLowerCase()));
}

/** Runs `query` on an unlinked server whose owner is nobody meanwhile; `then(replies)` with null when the server died
 * or answered an error (the caller then closes it: its state is not known). */
function askUnowned(s: ServerConnection, query: string, then: (replies: Buffer | null) => void): void {
  let finished = false;
  const finish = (replies: Buffer | null): void => {
    if (finished) return;
    finished = true;
    if (s.owner === watcher) s.owner = null;
    then(replies);
  };
  const watcher = { onServerClosed: () => finish(null), onServerLostBetween: () => finish(null) };
  s.owner = watcher;
  s.end.ask(writeQuery(query), (replies, sawError) => finish(sawError ? null : replies));
}

/** After a transaction-mode transaction (or a client's leaving) with `changes`: reads the parameters back from the
 * server into its values and, when the client is still there, into the client's. `then(reusable, tell)`: `tell` holds
 * ParameterStatus messages for the client when the server told it a value that is not its own (a RESET returns a
 * client to its startup value, a server to the pooler's): the client is between transactions and unlinked. */
export function readBack(
  s: ServerConnection,
  changes: ParamChanges,
  client: ClientParams | null,
  tracked: readonly string[],
  then: (reusable: boolean, tell: Buffer | null) => void,
): void {
  const values = serverValues(s, tracked);
  const effects = effectsOf(changes);
  const names = readBackNames(changes, effects, tracked, client?.values ?? null, values);
  askUnowned(s, readBackQuery(names), (replies) => {
    if (replies === null) return then(false, null);
    const retell = applyReadBack(dataRows(replies), names, effects, reportedNames(s), values, client);
    if (!client || retell.length === 0) return then(true, null);
    const spelled = new Map([...s.params.keys()].map((k) => [k.toLowerCase(), k]));
    then(
      true,
      Buffer.concat(retell.map((n) => writeParameterStatus(spelled.get(n) ?? n, client.values.values.get(n) ?? ''))),
    );
  });
}

/** The server's values are not known (its pinned client changed them, its cleaning may have reset them): the names
 * it may hold are kept for a read-back before its next sync. */
export function forgetValues(s: ServerConnection, changes: ParamChanges | null, tracked: readonly string[]): void {
  const values = serverValues(s, tracked);
  const effects = effectsOf(changes);
  s.paramsUnknown = readBackNames(changes, effects, tracked, null, values);
}

/** Before a client's transaction on `s`: false when the server already holds the client's values, else runs one
 * combined set_config ahead (its replies, ParameterStatus included, reach no client) and calls `then(ok)`; the server
 * then holds the client's values. `then(false)`: it answered an error (its state is not known). A server whose values
 * were forgotten is read back first. */
/** `s` holds `client`'s values and nothing it holds is unknown: syncFor would run nothing (checked first, as it is at
 * almost every checkout, without the callbacks a sync needs). */
export function inSync(s: ServerConnection, client: ClientParams, tracked: readonly string[]): boolean {
  return s.paramsUnknown === null && client.values.key === serverValues(s, tracked).key;
}

export function syncFor(
  s: ServerConnection,
  client: ClientParams,
  tracked: readonly string[],
  then: (ok: boolean) => void,
): boolean {
  const unknown = s.paramsUnknown;
  if (unknown) {
    s.paramsUnknown = null;
    const values = serverValues(s, tracked);
    const names = [...new Set([...unknown, ...client.values.values.keys()])];
    s.end.ask(writeQuery(readBackQuery(names)), (replies, sawError) => {
      if (sawError) return then(false);
      applyReadBack(dataRows(replies), names, effectsOf(null), reportedNames(s), values, null);
      if (!syncFor(s, client, tracked, then)) then(true);
    });
    return true;
  }
  const values = serverValues(s, tracked);
  const sql = syncQuery(client.values, values);
  if (sql === null) return false;
  s.end.ask(writeQuery(sql), (_replies, sawError) => {
    if (sawError) values.clear();
    else values.copyFrom(client.values);
    then(!sawError);
  });
  return true;
}
