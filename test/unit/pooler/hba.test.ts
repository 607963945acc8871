// auth_hba_file parsing and matching: line types, lists, @file, IPv4/IPv6 CIDRs and masks, first match, errors with file and line.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HbaRules, hbaMessage } from '../../../src/pooler/auth/hba.js';

const conn = (o: Partial<{ address: string; tls: boolean; database: string; user: string }> = {}) => ({
  address: '127.0.0.1',
  tls: false,
  database: 'app',
  user: 'alice',
  ...o,
});

describe('auth_hba_file rules', () => {
  it('the first matching line decides, by type, database, user and address', () => {
    const rules = HbaRules.parse(
      [
        '# comment line',
        'local all all trust',
        'hostssl app alice 127.0.0.1/32 scram-sha-256',
        'hostnossl app alice 127.0.0.0/8 md5   # trailing comment',
        'host "app,x",other bob,"carol" 10.0.0.0 255.0.0.0 password',
        'host sameuser all 192.168.0.0/16 trust',
        'host all +staff 0.0.0.0/0 trust',
        'host all all 2001:db8::/32 cert',
        'host all all ::ffff:0:0/96 reject',
        'host all all all reject',
      ].join('\n'),
      '/etc/hba.conf',
    );
    expect(rules.size).toBe(9);
    expect(rules.match(conn({ tls: true }))).toEqual({ method: 'scram-sha-256', line: 3 });
    expect(rules.match(conn())).toEqual({ method: 'md5', line: 4 });
    expect(rules.match(conn({ address: '::ffff:127.1.2.3' }))).toEqual({ method: 'md5', line: 4 });
    expect(rules.match(conn({ address: '10.9.8.7', database: 'app,x', user: 'carol' }))).toEqual({
      method: 'password',
      line: 5,
    });
    expect(rules.match(conn({ address: '10.9.8.7', database: 'app', user: 'bob' }))?.line).toBe(10);
    expect(rules.match(conn({ address: '192.168.1.1', database: 'dave', user: 'dave' }))).toEqual({
      method: 'trust',
      line: 6,
    });
    // +group never matches (role membership is PostgreSQL's); local lines never match TCP.
    expect(rules.match(conn({ address: '172.16.0.1', user: 'staff' }))?.line).toBe(10);
    expect(rules.match(conn({ address: '2001:db8::1' }))).toEqual({ method: 'cert', line: 8 });
    expect(rules.match(conn({ address: '2001:db9::1' }))?.line).toBe(10);
  });

  it("no match, and PostgreSQL's messages", () => {
    const rules = HbaRules.parse('hostssl all all 127.0.0.1/32 trust\n', 'f');
    expect(rules.match(conn())).toBeNull();
    expect(hbaMessage('none', conn())).toBe(
      'no pg_hba.conf entry for host "127.0.0.1", user "alice", database "app", no encryption',
    );
    expect(hbaMessage('reject', conn({ tls: true }))).toBe(
      'pg_hba.conf rejects connection for host "127.0.0.1", user "alice", database "app", SSL encryption',
    );
  });

  it('@file lists names from a file beside the hba file', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-hba-'));
    try {
      writeFileSync(path.join(dir, 'users.txt'), 'alice, bob\n# not carol\n');
      writeFileSync(path.join(dir, 'hba.conf'), 'host all @users.txt 0.0.0.0/0 md5\nhost all all 0.0.0.0/0 reject\n');
      const rules = HbaRules.load(path.join(dir, 'hba.conf'));
      expect(rules.match(conn({ user: 'bob' }))?.method).toBe('md5');
      expect(rules.match(conn({ user: 'carol' }))?.method).toBe('reject');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('errors name the file and the line', () => {
    const bad = (text: string) => () => HbaRules.parse(text, '/etc/hba.conf');
    expect(bad('host all all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 ident\n')).toThrow(
      '/etc/hba.conf:2: invalid authentication method "ident"',
    );
    expect(bad('hots all all 127.0.0.1/32 trust')).toThrow('/etc/hba.conf:1: invalid connection type "hots"');
    expect(bad('host all all 127.0.0.1 trust')).toThrow('/etc/hba.conf:1: no CIDR mask in address "127.0.0.1"');
    expect(bad('host all all 10.0.0.0/33 trust')).toThrow(/:1: invalid CIDR mask/);
    expect(bad('host all all db.example.com trust')).toThrow(
      /:1: invalid IP address "db.example.com" \(host names are not supported\)/,
    );
    expect(bad('host all all')).toThrow('/etc/hba.conf:1: end-of-line before IP address specification');
    expect(bad('host all all 10.0.0.0 255.0.255.0 trust')).toThrow(/not a prefix/);
  });
});
