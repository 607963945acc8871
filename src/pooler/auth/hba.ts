// auth_hba_file: PostgreSQL's pg_hba.conf format parsed into rules; the first line matching a connection decides its method.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const HBA_METHODS = ['trust', 'reject', 'md5', 'scram-sha-256', 'password', 'cert'] as const;
export type HbaMethod = (typeof HBA_METHODS)[number];

type ConnType = 'local' | 'host' | 'hostssl' | 'hostnossl' | 'hostgssenc' | 'hostnogssenc';
const CONN_TYPES: readonly ConnType[] = ['local', 'host', 'hostssl', 'hostnossl', 'hostgssenc', 'hostnogssenc'];

/** A name list: `all`, names, `+group` (role membership, unknown to the pooler: never matches), `@file` (read in). */
interface NameList {
  all: boolean;
  names: Set<string>;
  sameuser: boolean;
}

interface HbaRule {
  line: number;
  type: ConnType;
  databases: NameList;
  users: NameList;
  /** null: any address (`all`) or a local line. */
  addresses: net.BlockList | null;
  /** An IPv4 entry matches IPv4 clients only, an IPv6 entry IPv6 clients only (as PostgreSQL). */
  family: 'ipv4' | 'ipv6' | null;
  method: HbaMethod;
}

/** A connection as the rules see it. */
export interface HbaConnection {
  /** The client's IP address ('::ffff:' IPv4-mapped forms are taken as IPv4). */
  address: string;
  tls: boolean;
  database: string;
  user: string;
}

export class HbaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HbaError';
  }
}

/** Fields of a line: whitespace-separated, double quotes keep spaces and commas (and mark a keyword as a name). */
function fields(text: string): { value: string; quoted: boolean }[] {
  const out: { value: string; quoted: boolean }[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (i >= text.length || text[i] === '#') break;
    let value = '';
    let quoted = false;
    while (i < text.length && !/\s/.test(text[i]!) && text[i] !== '#') {
      if (text[i] === '"') {
        quoted = true;
        const end = text.indexOf('"', i + 1);
        if (end < 0) throw new Error('unterminated quoted string');
        value += `"${text.slice(i + 1, end)}"`;
        i = end + 1;
      } else value += text[i++];
    }
    out.push({ value, quoted });
  }
  return out;
}

/** Splits a field on commas outside quotes; quoted items come back as { name, quoted }. */
function items(field: string): { name: string; quoted: boolean }[] {
  const out: { name: string; quoted: boolean }[] = [];
  for (const m of field.matchAll(/"([^"]*)"|([^,]+)/g))
    out.push(m[1] !== undefined ? { name: m[1], quoted: true } : { name: m[2]!, quoted: false });
  return out;
}

function nameList(field: string, dir: string, kind: 'database' | 'user'): NameList {
  const list: NameList = { all: false, names: new Set(), sameuser: false };
  for (const { name, quoted } of items(field)) {
    if (!quoted && name === 'all') list.all = true;
    else if (!quoted && kind === 'database' && name === 'sameuser') list.sameuser = true;
    else if (!quoted && kind === 'database' && (name === 'samerole' || name === 'samegroup' || name === 'replication'))
      continue; // roles and replication: never here
    else if (!quoted && name.startsWith('+'))
      continue; // role membership is PostgreSQL's, not the pooler's: never matches
    else if (!quoted && name.startsWith('@')) {
      const file = path.resolve(dir, name.slice(1));
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new Error(`could not read ${file} (named by ${name}): ${(err as Error).message}`);
      }
      for (const line of text.split('\n'))
        for (const n of line
          .replace(/#.*/, '')
          .split(/[\s,]+/)
          .filter(Boolean))
          list.names.add(n.replace(/^"(.*)"$/, '$1'));
    } else list.names.add(name);
  }
  return list;
}

function maskPrefix(mask: string): number {
  if (net.isIP(mask) !== 4) throw new Error(`invalid IP mask "${mask}" (an IPv6 range takes the CIDR form)`);
  const bits = mask
    .split('.')
    .map((o) => Number(o).toString(2).padStart(8, '0'))
    .join('');
  if (!/^1*0*$/.test(bits)) throw new Error(`invalid IP mask "${mask}": not a prefix`);
  return bits.indexOf('0') < 0 ? bits.length : bits.indexOf('0');
}

function addressOf(spec: string, mask: string | null): { list: net.BlockList; family: 'ipv4' | 'ipv6' } | null {
  if (spec === 'all') return null;
  if (spec === 'samehost' || spec === 'samenet')
    throw new Error(`"${spec}" is not supported by the pooler: write the address range`);
  const [addr, prefixText, ...rest] = spec.split('/');
  const family = net.isIP(addr ?? '');
  if (!family || rest.length) throw new Error(`invalid IP address "${spec}" (host names are not supported)`);
  const max = family === 4 ? 32 : 128;
  let prefix = max;
  if (prefixText !== undefined) {
    if (!/^\d+$/.test(prefixText) || Number(prefixText) > max)
      throw new Error(`invalid CIDR mask in address "${spec}"`);
    prefix = Number(prefixText);
  } else if (mask !== null) {
    if (net.isIP(mask) !== family) throw new Error(`IP address and mask do not match in "${spec} ${mask}"`);
    prefix = maskPrefix(mask);
  } else throw new Error(`no CIDR mask in address "${spec}": write ${spec}/${max} for one host`);
  const list = new net.BlockList();
  list.addSubnet(addr!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  return { list, family: family === 4 ? 'ipv4' : 'ipv6' };
}

function parseLine(text: string, line: number, dir: string): HbaRule | null {
  const f = fields(text);
  if (!f.length) return null;
  const type = f[0]!.value as ConnType;
  if (!CONN_TYPES.includes(type)) throw new Error(`invalid connection type "${f[0]!.value}"`);
  const need = type === 'local' ? 4 : 5;
  if (f.length < need)
    throw new Error(
      `end-of-line before ${f.length < 2 ? 'database specification' : f.length < 3 ? 'role specification' : type !== 'local' && f.length < 4 ? 'IP address specification' : 'authentication method'}`,
    );
  const databases = nameList(f[1]!.value, dir, 'database');
  const users = nameList(f[2]!.value, dir, 'user');
  let next = 3;
  let range: ReturnType<typeof addressOf> = null;
  if (type !== 'local') {
    const spec = f[3]!.value;
    const maybeMask = f[4]?.value ?? '';
    const hasMask = !spec.includes('/') && net.isIP(spec) !== 0 && net.isIP(maybeMask) !== 0;
    range = addressOf(spec, hasMask ? maybeMask : null);
    next = hasMask ? 5 : 4;
  }
  const methodField = f[next];
  if (!methodField) throw new Error('end-of-line before authentication method');
  const method = methodField.value as HbaMethod;
  if (!HBA_METHODS.includes(method))
    throw new Error(
      `invalid authentication method "${methodField.value}" (the pooler takes ${HBA_METHODS.join(', ')})`,
    );
  for (const opt of f.slice(next + 1)) {
    if (!/^[a-z_]+=/.test(opt.value)) throw new Error(`authentication option not in name=value format: ${opt.value}`);
  }
  return { line, type, databases, users, addresses: range?.list ?? null, family: range?.family ?? null, method };
}

function inList(list: NameList, name: string, user: string): boolean {
  return list.all || list.names.has(name) || (list.sameuser && name === user);
}

/** The rules of one auth_hba_file. */
export class HbaRules {
  private constructor(
    readonly file: string,
    private readonly rules: HbaRule[],
  ) {}

  /** Reads and parses `file`; throws HbaError naming the file and line of the first problem. */
  static load(file: string): HbaRules {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new HbaError(`auth_hba_file ${file}: ${(err as Error).message}`);
    }
    return HbaRules.parse(text, file);
  }

  static parse(text: string, file: string): HbaRules {
    const rules: HbaRule[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      let l = lines[i]!;
      const first = i + 1;
      // A backslash at the end continues the line (PostgreSQL 16).
      while (l.endsWith('\\') && i + 1 < lines.length) l = l.slice(0, -1) + ' ' + lines[++i];
      try {
        const rule = parseLine(l, first, path.dirname(file));
        if (rule) rules.push(rule);
      } catch (err) {
        throw new HbaError(`${file}:${first}: ${(err as Error).message}`);
      }
    }
    return new HbaRules(file, rules);
  }

  get size(): number {
    return this.rules.length;
  }

  /** Some line uses `cert`: TLS clients are asked for a certificate. */
  get wantsCertificates(): boolean {
    return this.rules.some((r) => r.method === 'cert');
  }

  /** The method to use, or PostgreSQL's error when no line matches or a reject line does. */
  verdict(c: HbaConnection): { method: HbaMethod } | { error: string } {
    const m = this.match(c);
    if (!m) return { error: hbaMessage('none', c) };
    return m.method === 'reject' ? { error: hbaMessage('reject', c) } : { method: m.method };
  }

  /** The method of the first matching line, with its line number, or null when none matches. */
  match(c: HbaConnection): { method: HbaMethod; line: number } | null {
    const address =
      c.address.startsWith('::ffff:') && net.isIP(c.address.slice(7)) === 4 ? c.address.slice(7) : c.address;
    const family = net.isIP(address) === 6 ? 'ipv6' : 'ipv4';
    for (const r of this.rules) {
      // The pooler listens on TCP only, and never encrypts with GSSAPI.
      if (r.type === 'local' || r.type === 'hostgssenc') continue;
      if (r.type === 'hostssl' && !c.tls) continue;
      if (r.type === 'hostnossl' && c.tls) continue;
      if (r.addresses && (r.family !== family || !r.addresses.check(address, family))) continue;
      if (!inList(r.databases, c.database, c.user) || !inList(r.users, c.user, c.user)) continue;
      return { method: r.method, line: r.line };
    }
    return null;
  }
}

/** PostgreSQL's words for a connection no line takes, or one a reject line refuses. */
export function hbaMessage(kind: 'none' | 'reject', c: HbaConnection): string {
  const enc = c.tls ? 'SSL encryption' : 'no encryption';
  return kind === 'none'
    ? `no pg_hba.conf entry for host "${c.address}", user "${c.user}", database "${c.database}", ${enc}`
    : `pg_hba.conf rejects connection for host "${c.address}", user "${c.user}", database "${c.database}", ${enc}`;
}
