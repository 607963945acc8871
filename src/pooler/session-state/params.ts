// Session parameters in transaction mode: what each client has set and each server holds, read back and synced so a client sees only its own.
import { BackendMessage } from '../../protocol/codes.js';
import { PARAM_NAME, parseParamList } from '../../protocol/param-names.js';
import { addParamEffects, emptyEffects, type ParamEffects } from './set-statements.js';

/** Tracked for every client whatever the configuration: PgBouncer's list, plus search_path (which PostgreSQL reports
 * only from version 18; tidepool reads it back instead). Lower case, as every name here. */
export const BUILTIN_PARAMS = [
  'client_encoding',
  'datestyle',
  'timezone',
  'standard_conforming_strings',
  'application_name',
  'search_path',
] as const;

const NO_STARTUP: ReadonlyMap<string, string> = new Map();

/** Startup-packet keys that are not parameters of the session. */
const NOT_PARAMS = new Set(['user', 'database', 'replication', 'options']);

/** Every parameter the client asked for at startup, by lower-case name, as PostgreSQL applies them: `options`
 * (`-c name=value`, `--name=value`) first, then the packet's own keys, which win over them. */
export function startupWishes(startupPacket: ReadonlyMap<string, string>): Map<string, string> {
  const options = startupPacket.get('options');
  const out = options ? optionParams(options) : new Map<string, string>();
  for (const [k, v] of startupPacket) {
    const n = k.toLowerCase();
    if (NOT_PARAMS.has(n) || n.startsWith('_pq_.') || !PARAM_NAME.test(n)) continue;
    out.delete(n);
    out.set(n, v);
  }
  return out;
}

let trackedFor = '';
let trackedList: readonly string[] = BUILTIN_PARAMS;

/** The built-in names plus `track_extra_parameters` (a comma-separated list, checked when the config is loaded). */
export function trackedParams(extra: string): readonly string[] {
  if (extra !== trackedFor) {
    trackedFor = extra;
    const names = new Set<string>(BUILTIN_PARAMS);
    for (const n of parseParamList(extra)) names.add(n);
    trackedList = Object.freeze([...names]);
  }
  return trackedList;
}

/** What a relay gathered on a server since it last asked (relay.ts ServerEnd.takeParams): flag bits and the texts of
 * statements that may change a parameter. */
export interface ParamChanges {
  /** 1: texts; 2: a statement not seen whole (or too many texts); 4: PostgreSQL sent ParameterStatus. */
  flags: number;
  texts: string[];
}

/** Parameter values by name; a missing name holds its session default (what RESET gives on a pool's server). The
 * key is compared at every link, so a client and a server that agree cost one string comparison. */
export class ParamValues {
  private map = new Map<string, string>();
  /** The map is another ParamValues' too (copyFrom): it is copied before this one changes. */
  private shared = false;
  private cached: string | null = '';

  /** Name -> value, read only: changes go through set, clear and copyFrom. */
  get values(): ReadonlyMap<string, string> {
    return this.map;
  }

  private own(): Map<string, string> {
    if (this.shared) {
      this.map = new Map(this.map);
      this.shared = false;
    }
    return this.map;
  }

  get key(): string {
    if (this.cached === null) {
      const names = [...this.values.keys()].sort();
      this.cached = names.map((n) => `${n}=${this.values.get(n)!}`).join('\0');
    }
    return this.cached;
  }

  set(name: string, value: string | undefined): void {
    if (value === undefined ? !this.map.has(name) : this.map.get(name) === value) return;
    if (value === undefined) this.own().delete(name);
    else this.own().set(name, value);
    this.cached = null;
  }

  clear(): void {
    this.map = new Map();
    this.shared = false;
    this.cached = null;
  }

  /** This one holds `other`'s values from now on (one map shared until either changes). */
  copyFrom(other: ParamValues): void {
    const key = other.key;
    this.map = other.map;
    this.shared = other.shared = true;
    this.cached = key;
  }

  /** The tracked ones of a login's ParameterStatus values (PostgreSQL's spelling of names folded), with what servers
   * log in with (server-login.ts) where a server did not report it. */
  static fromReported(
    reported: ReadonlyMap<string, string>,
    tracked: readonly string[],
    applicationName = '',
  ): ParamValues {
    const p = new ParamValues();
    p.map.set('client_encoding', 'UTF8');
    p.map.set('application_name', applicationName);
    for (const [k, v] of reported) {
      const n = k.toLowerCase();
      if (tracked.includes(n)) p.map.set(n, v);
    }
    p.cached = null;
    return p;
  }
}

/** `-c name=value` and `--name=value` of a startup packet's options (backslash escapes a space). */
export function optionParams(options: string): Map<string, string> {
  const words: string[] = [];
  let cur = '';
  for (let i = 0; i < options.length; i++) {
    const ch = options[i]!;
    if (ch === '\\' && i + 1 < options.length) cur += options[++i];
    else if (ch === ' ' || ch === '\t') {
      if (cur) words.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur) words.push(cur);
  const out = new Map<string, string>();
  for (let i = 0; i < words.length; i++) {
    let w = words[i]!;
    if (w === '-c' && i + 1 < words.length) w = words[++i]!;
    else if (w.startsWith('-c')) w = w.slice(2);
    else if (w.startsWith('--')) w = w.slice(2);
    else continue;
    const eq = w.indexOf('=');
    if (eq <= 0) continue;
    const name = w.slice(0, eq).toLowerCase().replace(/-/g, '_');
    if (PARAM_NAME.test(name)) out.set(name, w.slice(eq + 1));
  }
  return out;
}

/** The parameters of the logins the native relay ran, by the pool's reported values: such logins differ only in
 * application_name and whether they named client_encoding, so each kind is worked out once and copied after. */
const nativeLoginParams = new WeakMap<
  ReadonlyMap<string, string>,
  { tracked: readonly string[]; byKind: Map<string, ClientParams> }
>();
/** Kinds kept per pool (application names past it are worked out each time). */
const NATIVE_KINDS_MAX = 256;

/** One client's parameters: its wishes (`values`) and what it asked for at startup (RESET returns there). */
export class ClientParams {
  readonly values: ParamValues;
  /** Replaced, never changed in place (a copy shares it): by `settle` only, before the greeting. */
  startup: ReadonlyMap<string, string>;

  /** `reported`: the pool's login ParameterStatus values (what a client that asks for nothing gets). With `copyOf`,
   * that client's parameters are copied instead (the other arguments are not read). */
  constructor(
    reported: ReadonlyMap<string, string>,
    startupPacket: ReadonlyMap<string, string>,
    tracked: readonly string[],
    copyOf?: ClientParams,
  ) {
    if (copyOf) {
      this.values = new ParamValues();
      this.values.copyFrom(copyOf.values);
      this.startup = copyOf.startup;
      return;
    }
    this.values = ParamValues.fromReported(reported, tracked);
    // Every parameter PostgreSQL would take from the packet is the client's, followed from server to server.
    const startup = startupWishes(startupPacket);
    for (const [n, v] of startup) this.values.set(n, v);
    // What RESET returns application_name to when the client sent none (servers may log in with the pool's).
    if (!startup.has('application_name')) startup.set('application_name', '');
    this.startup = startup;
  }

  /** A login the native relay ran (user, database, application_name and, when it named one, the pool's
   * client_encoding): a copy of the first such login's parameters, the comparison key included. */
  static ofNativeLogin(
    reported: ReadonlyMap<string, string>,
    tracked: readonly string[],
    user: string,
    database: string,
    applicationName: string,
    clientEncoding: string | undefined,
  ): ClientParams {
    let cache = nativeLoginParams.get(reported);
    if (!cache || cache.tracked !== tracked) nativeLoginParams.set(reported, (cache = { tracked, byKind: new Map() }));
    const kind = `${clientEncoding ?? ''}\0${applicationName}`;
    let first = cache.byKind.get(kind);
    if (!first) {
      const startup = new Map([
        ['user', user],
        ['database', database],
        ['application_name', applicationName],
      ]);
      if (clientEncoding !== undefined) startup.set('client_encoding', clientEncoding);
      first = new ClientParams(reported, startup, tracked);
      if (cache.byKind.size >= NATIVE_KINDS_MAX) cache.byKind.clear();
      cache.byKind.set(kind, first);
    }
    return new ClientParams(reported, NO_STARTUP, tracked, first);
  }

  /** A client a takeover moved here (takeover-clients.ts): its values and startup wishes as the old process had them. */
  static restore(values: Iterable<[string, string]>, startup: Iterable<[string, string]>): ClientParams {
    const p = new ClientParams(NO_STARTUP, NO_STARTUP, []);
    p.values.clear();
    for (const [n, v] of values) p.values.set(n, v);
    p.startup = new Map(startup);
    return p;
  }

  /** PostgreSQL checked the startup values on a server (startup-params.ts): its spelling of each replaces the
   * client's (`UTF8` for `utf8`), so the greeting, RESET and every later comparison use what servers report. */
  settle(values: ReadonlyMap<string, string>): void {
    const startup = new Map(this.startup);
    for (const [n, v] of values) {
      startup.set(n, v);
      this.values.set(n, v);
    }
    this.startup = startup;
  }

  /** The values the client is told at login: the pool's, with its own startup values in their place. */
  greeting(reported: ReadonlyMap<string, string>): Map<string, string> | null {
    let out: Map<string, string> | null = null;
    for (const [k, v] of reported) {
      const own = this.startup.get(k.toLowerCase());
      if (own === undefined || own === v || k === 'application_name') continue;
      out ??= new Map(reported);
      out.set(k, own);
    }
    return out;
  }
}

/** A string as an SQL literal (E'...': backslashes and quotes escaped). */
export function literal(s: string): string {
  return `E'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** One statement that makes a server's values the client's (set_config(name, NULL, false) is RESET); null when
 * they agree. */
export function syncQuery(client: ParamValues, server: ParamValues): string | null {
  if (client.key === server.key) return null;
  const cols: string[] = [];
  const names = new Set([...client.values.keys(), ...server.values.keys()]);
  for (const n of names) {
    const want = client.values.get(n);
    if (want === server.values.get(n)) continue;
    cols.push(`pg_catalog.set_config(${literal(n)}, ${want === undefined ? 'NULL' : literal(want)}, false)`);
  }
  return cols.length ? `SELECT ${cols.join(', ')}` : null;
}

/** Names to read back after a server ran `changes` for a client. */
export function readBackNames(
  changes: ParamChanges | null,
  effects: ParamEffects,
  tracked: readonly string[],
  client: ParamValues | null,
  server: ParamValues,
): string[] {
  const names = new Set<string>(tracked);
  for (const n of effects.names) names.add(n);
  if (client) for (const n of client.values.keys()) names.add(n);
  for (const n of server.values.keys()) names.add(n);
  void changes;
  return [...names].filter((n) => PARAM_NAME.test(n));
}

export function effectsOf(changes: ParamChanges | null): ParamEffects {
  const e = emptyEffects();
  if (changes) for (const t of changes.texts) addParamEffects(t, e);
  return e;
}

/** Each name, its value (current_setting: custom placeholders are not in pg_settings) and its session default
 * (pg_settings.reset_val; NULL for a placeholder, whose default is empty). */
export function readBackQuery(names: readonly string[]): string {
  return `SELECT n, pg_catalog.current_setting(n, true), (SELECT reset_val FROM pg_catalog.pg_settings WHERE lower(name) = n) FROM pg_catalog.unnest(ARRAY[${names.map(literal).join(', ')}]::text[]) AS n`;
}

/** The DataRows of a captured reply, as text columns (null for SQL NULL). */
export function dataRows(buf: Buffer): (string | null)[][] {
  const rows: (string | null)[][] = [];
  let pos = 0;
  while (pos + 5 <= buf.length) {
    const type = buf[pos]!;
    const len = buf.readUInt32BE(pos + 1);
    const end = pos + 1 + len;
    if (end > buf.length) break;
    if (type === BackendMessage.DataRow) {
      const n = buf.readUInt16BE(pos + 5);
      let p = pos + 7;
      const row: (string | null)[] = [];
      for (let i = 0; i < n && p + 4 <= end; i++) {
        const l = buf.readInt32BE(p);
        p += 4;
        if (l < 0) row.push(null);
        else {
          row.push(buf.toString('utf8', p, p + l));
          p += l;
        }
      }
      rows.push(row);
    }
    pos = end;
  }
  return rows;
}

/** Applies a read-back: the server's values become what it reported, and the client's too (but that a parameter the
 * client RESET returns to its startup value, as on its own connection). `reported`: names PostgreSQL reports, kept
 * explicit on both sides (a server's session default of application_name is the pooler's, not the client's). Returns
 * the reported names whose value the client was told by the server but is not its own (RESET to a startup value). */
export function applyReadBack(
  rows: (string | null)[][],
  names: readonly string[],
  effects: ParamEffects,
  reported: ReadonlySet<string>,
  server: ParamValues,
  client: ClientParams | null,
): string[] {
  const retell: string[] = [];
  const got = new Map<string, [string, string]>();
  for (const r of rows) if (r[0] && r[1] !== null && r[1] !== undefined) got.set(r[0], [r[1], r[2] ?? '']);
  for (const n of names) {
    const row = got.get(n);
    // A placeholder (myapp.tenant) once set cannot be removed from a session: empty counts as its default.
    const isDefault = !row || row[0] === row[1];
    const value = !row ? undefined : reported.has(n) || !isDefault ? row[0] : undefined;
    server.set(n, value);
    if (!client) continue;
    const own = client.startup.get(n);
    if ((effects.resetAll || effects.resets.has(n)) && isDefault && own !== undefined) {
      client.values.set(n, own);
      if (reported.has(n) && own !== value) retell.push(n);
    } else client.values.set(n, value);
  }
  return retell;
}
