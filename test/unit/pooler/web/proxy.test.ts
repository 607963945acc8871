// Peer resolution behind trusted proxies: right-to-left reading, trusted hops skipped, forged headers ignored.
import { describe, expect, it } from 'vitest';
import { formatPeer, parseForwarded, resolvePeer, TrustedProxies } from '../../../../src/pooler/web/auth/proxy.js';

const trusted = new TrustedProxies(['10.0.0.0/8', '192.168.1.5', 'fd00::/8']);

describe('TrustedProxies', () => {
  it('matches IPv4 ranges, single addresses, IPv4-mapped IPv6 and IPv6 ranges', () => {
    expect(trusted.has('10.1.2.3')).toBe(true);
    expect(trusted.has('::ffff:10.1.2.3')).toBe(true);
    expect(trusted.has('192.168.1.5')).toBe(true);
    expect(trusted.has('192.168.1.6')).toBe(false);
    expect(trusted.has('fd00::1')).toBe(true);
    expect(trusted.has('2001:db8::1')).toBe(false);
    expect(trusted.has('not-an-ip')).toBe(false);
  });
  it('rejects malformed ranges', () => {
    expect(() => new TrustedProxies(['10.0.0.0/33'])).toThrow(/prefix/);
    expect(() => new TrustedProxies(['example.com'])).toThrow(/not an address/);
  });
  it('lenient parsing leaves out and reports malformed entries', () => {
    const problems: string[] = [];
    const t = TrustedProxies.lenient(['10.0.0.0/8', 'bogus', '1.2.3.4/40'], (p) => problems.push(p));
    expect(t.has('10.9.9.9')).toBe(true);
    expect(problems).toHaveLength(2);
  });
  it('an empty list trusts nobody', () => {
    expect(new TrustedProxies([]).has('127.0.0.1')).toBe(false);
  });
});

describe('resolvePeer', () => {
  it('ignores proxy headers from an untrusted peer', () => {
    const p = resolvePeer(
      '203.0.113.9',
      5555,
      { 'x-forwarded-for': '1.2.3.4', forwarded: 'for=5.6.7.8', 'x-forwarded-proto': 'https' },
      trusted,
    );
    expect(formatPeer(p)).toBe('203.0.113.9:5555');
    expect(p.secure).toBe(false);
  });
  it('reads X-Forwarded-For right to left, skipping trusted hops', () => {
    const p = resolvePeer(
      '10.0.0.1',
      4000,
      { 'x-forwarded-for': '6.6.6.6, 198.51.100.7, 10.9.9.9, 192.168.1.5' },
      trusted,
    );
    expect(p.address).toBe('198.51.100.7');
    expect(formatPeer(p)).toBe('198.51.100.7');
  });
  it('a client-forged leftmost entry does not win over the first untrusted hop', () => {
    const p = resolvePeer('10.0.0.1', 4000, { 'x-forwarded-for': '127.0.0.1, 203.0.113.50' }, trusted);
    expect(p.address).toBe('203.0.113.50');
  });
  it('reads RFC 7239 Forwarded with ports, IPv6 and quotes', () => {
    const p = resolvePeer(
      '::ffff:10.0.0.1',
      4000,
      { forwarded: 'for="[2001:db8::17]:4711";proto=https, for=10.2.2.2' },
      trusted,
    );
    expect(formatPeer(p)).toBe('[2001:db8::17]:4711');
    expect(parseForwarded('for=unknown, for="_hidden", for=1.2.3.4:80')).toEqual([
      null,
      null,
      { address: '1.2.3.4', port: 80 },
    ]);
  });
  it('stops at an obfuscated hop', () => {
    const p = resolvePeer('10.0.0.1', 4000, { forwarded: 'for=198.51.100.1, for=_hidden, for=10.3.3.3' }, trusted);
    expect(p.address).toBe('10.3.3.3');
  });
  it('counts as HTTPS only through a trusted proxy forwarding https', () => {
    expect(resolvePeer('10.0.0.1', 1, { 'x-forwarded-proto': 'https' }, trusted).secure).toBe(true);
    expect(resolvePeer('10.0.0.1', 1, { 'x-forwarded-proto': 'http' }, trusted).secure).toBe(false);
    expect(resolvePeer('10.0.0.1', 1, {}, trusted).secure).toBe(false);
    expect(resolvePeer('127.0.0.1', 1, { 'x-forwarded-proto': 'https' }, trusted).secure).toBe(false);
  });
});
