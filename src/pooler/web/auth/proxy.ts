// Client address and scheme behind trusted reverse proxies: X-Forwarded-For, RFC 7239 Forwarded, X-Forwarded-Proto.
import net from 'node:net';

/** Trusted proxy ranges; an empty list trusts nobody, so proxy headers are ignored. */
export class TrustedProxies {
  private readonly list = new net.BlockList();
  readonly size: number;

  /** Throws on a malformed CIDR; the config loader has already checked that the list holds strings. */
  constructor(cidrs: readonly string[]) {
    for (const c of cidrs) this.add(c);
    this.size = cidrs.length;
  }

  /** Like the constructor, but a malformed entry is reported and left out (trusting less is the safe side). */
  static lenient(cidrs: readonly string[], report: (problem: string) => void): TrustedProxies {
    const good = cidrs.filter((c) => {
      try {
        new TrustedProxies([c]);
        return true;
      } catch (err) {
        report((err as Error).message);
        return false;
      }
    });
    return new TrustedProxies(good);
  }

  private add(cidr: string): void {
    const [addr = '', bits] = cidr.trim().split('/');
    const family = net.isIP(addr);
    if (family === 0) throw new Error(`trusted_proxies: "${cidr}" is not an address or CIDR range`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    const max = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? max : Number(bits);
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > max)
      throw new Error(`trusted_proxies: "${cidr}" has a bad prefix length`);
    this.list.addSubnet(addr, prefix, type);
    // An IPv4 range also matches the IPv4-mapped IPv6 form a dual-stack socket reports (::ffff:a.b.c.d).
    if (family === 4) this.list.addSubnet(`::ffff:${addr}`, 96 + prefix, 'ipv6');
  }

  has(address: string): boolean {
    const family = net.isIP(address);
    if (family === 0 || this.size === 0) return false;
    return this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

export interface PeerInfo {
  /** Address of the client as far as trusted hops let us see. */
  address: string;
  /** Port when known (the TCP peer's, or a port in a Forwarded `for=` value). */
  port: number | undefined;
  /** Whether the TCP peer is a trusted proxy. */
  viaTrustedProxy: boolean;
  /** True only when a trusted proxy forwarded `X-Forwarded-Proto: https`. */
  secure: boolean;
}

/** `address:port`, IPv6 in brackets; the bare address when the port is unknown. */
export function formatPeer(p: { address: string; port: number | undefined }): string {
  const a = net.isIP(p.address) === 6 ? `[${p.address}]` : p.address;
  return p.port === undefined ? a : `${a}:${p.port}`;
}

function unmapV4(address: string): string {
  return address.startsWith('::ffff:') && net.isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** One node of a Forwarded `for=` value: `1.2.3.4`, `"1.2.3.4:80"`, `"[2001:db8::1]:4711"`, `unknown`, `_hidden`. */
function parseForwardedNode(raw: string): { address: string; port: number | undefined } | null {
  let v = raw.trim();
  if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
  let address = v;
  let port: number | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(v);
  if (bracket) {
    address = bracket[1]!;
    port = bracket[2] === undefined ? undefined : Number(bracket[2]);
  } else if (net.isIP(v) === 0) {
    const m = /^([^:]+):(\d{1,5})$/.exec(v);
    if (m) {
      address = m[1]!;
      port = Number(m[2]);
    }
  }
  if (net.isIP(address) === 0) return null;
  return { address, port };
}

/** Hops listed in `Forwarded` (RFC 7239), client first; null entries are obfuscated or unparsable. */
export function parseForwarded(header: string): ({ address: string; port: number | undefined } | null)[] {
  const hops: ({ address: string; port: number | undefined } | null)[] = [];
  for (const element of header.split(',')) {
    let found: { address: string; port: number | undefined } | null = null;
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq < 0) continue;
      if (pair.slice(0, eq).trim().toLowerCase() === 'for') found = parseForwardedNode(pair.slice(eq + 1));
    }
    hops.push(found);
  }
  return hops;
}

/** Hops listed in `X-Forwarded-For`, client first. */
export function parseXForwardedFor(header: string): ({ address: string; port: number | undefined } | null)[] {
  return header.split(',').map((s) => {
    const a = s.trim();
    return net.isIP(a) ? { address: a, port: undefined } : parseForwardedNode(a);
  });
}

function headerText(v: string | string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v.join(',') : v;
}

/**
 * Resolves the client behind the TCP peer. Proxy headers count only when the TCP peer is trusted; the hop
 * list is then read right to left, skipping trusted hops, and the first untrusted address is the client.
 * `X-Forwarded-For` wins over `Forwarded` when both arrive.
 */
export function resolvePeer(
  socketAddress: string | undefined,
  socketPort: number | undefined,
  headers: Record<string, string | string[] | undefined>,
  trusted: TrustedProxies,
): PeerInfo {
  const tcp = unmapV4(socketAddress ?? '');
  const peer: PeerInfo = { address: tcp || '-', port: socketPort, viaTrustedProxy: false, secure: false };
  if (!tcp || !trusted.has(tcp)) return peer;
  peer.viaTrustedProxy = true;
  const proto = headerText(headers['x-forwarded-proto']);
  if (proto !== undefined) {
    const values = proto
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean);
    peer.secure = values.length > 0 && values.every((v) => v === 'https');
  }
  const xff = headerText(headers['x-forwarded-for']);
  const fwd = headerText(headers['forwarded']);
  const hops = xff !== undefined ? parseXForwardedFor(xff) : fwd !== undefined ? parseForwarded(fwd) : [];
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i];
    // An unparsable or obfuscated hop cannot be trusted further: stop at the last address we know.
    if (!hop) break;
    const address = unmapV4(hop.address);
    peer.address = address;
    peer.port = hop.port;
    if (!trusted.has(address)) break;
  }
  return peer;
}
