// The pooler TOML config: units, the schema (defaults, types, did-you-mean), and every problem reported with its key.
import { describe, expect, it } from 'vitest';
import { parsePoolerConfig } from '../../../src/config/pooler.js';
import { parseDuration, parseSize } from '../../../src/config/units.js';

describe('units', () => {
  it('parses durations', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('5s')).toBe(5000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration(1500)).toBe(1500);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('5 parsecs')).toBeNull();
    expect(parseDuration(-1)).toBeNull();
  });
  it('parses sizes', () => {
    expect(parseSize('256MB')).toBe(256 * 1024 * 1024);
    expect(parseSize('1kb')).toBe(1024);
    expect(parseSize(10)).toBe(10);
    expect(parseSize('12 furlongs')).toBeNull();
  });
});

describe('schema', () => {
  it('treats an empty section (null, as YAML parses "limits:") as all defaults', async () => {
    const { validate, t } = await import('../../../src/config/schema.js');
    const shape = { limits: t.section({ max: t.int(7) }) };
    expect(validate(shape, { limits: null })).toEqual({ value: { limits: { max: 7 } }, problems: [] });
    expect(validate(shape, { limits: 3 }).problems[0]!.path).toBe('limits');
  });
});

describe('pooler config', () => {
  const good = `
[general]
host = "127.0.0.1"
port = 6432
admin_password = "a-long-secret"
connect_timeout = "3s"
query_wait_timeout = 5000

[pools.app]
server_port = 5433
[[pools.app.users]]
username = "app"
password = "secret"
pool_size = 5
`;
  it('fills defaults and freezes', () => {
    const { config, problems } = parsePoolerConfig(good);
    expect(problems).toEqual([]);
    expect(config.general.pool_mode).toBe('transaction');
    expect(config.general.idle_timeout).toBe(600_000);
    expect(config.general.max_message_size).toBe(256 * 1024 * 1024);
    expect(config.pools.app!.server_host).toBe('127.0.0.1');
    expect(config.pools.app!.users[0]!.min_pool_size).toBe(0);
    expect(config.pools.app!.users[0]!.pool_mode).toBeNull();
    expect(config.web.port).toBe(9127);
    expect(config.web.sso_allowed_users).toEqual(['*']);
    expect(Object.isFrozen(config.general)).toBe(true);
    expect([
      config.general.prepared_statements,
      config.general.prepared_statements_cache_size,
      config.general.server_prepared_statements_cache_size,
    ]).toEqual([true, 8192, 256]);
  });

  it('checks the prepared-statement keys', () => {
    const { problems } = parsePoolerConfig(
      `${good}
[general]
prepared_statement = false
server_prepared_statements_cache_size = 0
`.replace('[general]\n', ''),
    );
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p]));
    expect(byPath['general.prepared_statement']!.hint).toBe('did you mean "prepared_statements"?');
    expect(byPath['general.server_prepared_statements_cache_size']!.expected).toContain('1');
  });

  it('query_stats_size: 1000 by default, 0 (off) allowed, negative refused', () => {
    expect(parsePoolerConfig(good).config.general.query_stats_size).toBe(1000);
    const off = parsePoolerConfig(good.replace('port = 6432\n', 'port = 6432\nquery_stats_size = 0\n'));
    expect(off.problems).toEqual([]);
    expect(off.config.general.query_stats_size).toBe(0);
    const bad = parsePoolerConfig(good.replace('port = 6432\n', 'port = 6432\nquery_stats_size = -1\n'));
    expect(bad.problems.map((p) => p.path)).toEqual(['general.query_stats_size']);
  });

  it('reports every problem with its path, expectation and a did-you-mean', () => {
    const { problems } = parsePoolerConfig(`
[general]
prot = 6432
pool_mode = "statement"
idle_timeout = "ten minutes"
[pools.app]
[[pools.app.users]]
pool_size = "big"
[web]
ui = "yes"
`);
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p]));
    expect(byPath['general.prot']!.hint).toBe('did you mean "port"?');
    expect(byPath['general.pool_mode']!.expected).toContain('"transaction"');
    expect(byPath['general.pool_mode']!.found).toContain('statement');
    expect(byPath['general.idle_timeout']!.expected).toContain('duration');
    expect(byPath['pools.app.users[0].username']!.found).toContain('required');
    expect(byPath['pools.app.users[0].pool_size']).toBeDefined();
    expect(byPath['web.ui']).toBeDefined();
  });

  it('accepts [prometheus] as an alias of [web], but not both', () => {
    expect(parsePoolerConfig('[prometheus]\nenabled = true\nport = 9999\n').config.web.port).toBe(9999);
    expect(parsePoolerConfig('[prometheus]\nenabled = true\n[web]\nport = 1\n').problems.map((p) => p.path)).toContain(
      'prometheus',
    );
  });

  it('checks trusted_proxies are addresses or CIDR ranges', () => {
    expect(parsePoolerConfig('[web]\ntrusted_proxies = ["10.0.0.0/8", "::1/128", "127.0.0.1"]\n').problems).toEqual([]);
    const { problems } = parsePoolerConfig('[web]\ntrusted_proxies = ["10.0.0.0/33", "proxy.local", "1.2.3.4/8/9"]\n');
    expect(problems.map((p) => p.path)).toEqual([
      'web.trusted_proxies[0]',
      'web.trusted_proxies[1]',
      'web.trusted_proxies[2]',
    ]);
  });

  it('reports TOML syntax errors with a line', () => {
    const { problems } = parsePoolerConfig('[general\nport = 1');
    expect(problems[0]!.path).toMatch(/line 1/);
    expect(problems[0]!.expected).toBe('valid TOML');
  });
});

describe('TLS keys', () => {
  const withGeneral = (lines: string) => `[general]\n${lines}\n[pools.app]\n[[pools.app.users]]\nusername = "u"\n`;
  it("defaults to no TLS either way, and reads PgBouncer's protocol names", async () => {
    const { parseTlsProtocols } = await import('../../../src/config/pooler.js');
    const { config, problems } = parsePoolerConfig(withGeneral(''));
    expect(problems).toEqual([]);
    expect(config.general).toMatchObject({
      client_tls_sslmode: 'disable',
      server_tls_sslmode: 'disable',
      client_tls_protocols: 'secure',
      client_tls_ciphers: 'default',
    });
    expect(parseTlsProtocols('secure')).toEqual({ min: 'TLSv1.2', max: 'TLSv1.3' });
    expect(parseTlsProtocols('tlsv1.3')).toEqual({ min: 'TLSv1.3', max: 'TLSv1.3' });
    expect(parseTlsProtocols('all')).toEqual({ min: 'TLSv1', max: 'TLSv1.3' });
  });
  it('names each key that is missing or wrong', () => {
    const { problems } = parsePoolerConfig(
      withGeneral(
        'client_tls_sslmode = "verify-full"\nserver_tls_key_file = "/k.pem"\nserver_tls_protocols = "tlsv9"\nclient_tls_sslmode_typo = 1',
      ),
    );
    const paths = problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'general.client_tls_key_file',
        'general.client_tls_cert_file',
        'general.client_tls_ca_file',
        'general.server_tls_cert_file',
        'general.server_tls_protocols',
      ]),
    );
    expect(parsePoolerConfig(withGeneral('client_tls_sslmode = "sometimes"')).problems[0]!.path).toBe(
      'general.client_tls_sslmode',
    );
  });
});
