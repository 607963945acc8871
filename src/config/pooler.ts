// The pooler's TOML configuration: schema with defaults, load() -> frozen typed config.
import { isIP } from 'node:net';
import { parse as parseToml } from 'smol-toml';
import { parseParamList } from '../protocol/param-names.js';
import { type InferShape, type Problem, restartOnly, t, validate, formatProblem, loadConfigFile } from './schema.js';

export const POOL_MODES = ['transaction', 'session'] as const;
export type PoolMode = (typeof POOL_MODES)[number];
/** sslmode values of client_tls_sslmode and server_tls_sslmode (PgBouncer's and libpq's names). */
export const TLS_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type TlsMode = (typeof TLS_MODES)[number];
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const userShape = {
  username: t.requiredString('Name the client logs in with.'),
  password: t.string('', 'Plaintext, "md5<32 hex>" or "SCRAM-SHA-256$<iter>:<salt>$<stored>:<server>". Empty: trust.'),
  pool_size: t.int(20, 'Server connections this user may hold in this pool.', 1, 100_000),
  min_pool_size: t.int(0, 'Idle server connections kept open.', 0, 100_000),
  pool_mode: t.optOneOf(POOL_MODES, "Overrides the pool's pool_mode for this user."),
  server_username: t.optString('User name toward PostgreSQL (default: username).'),
  server_password: t.optString('Password toward PostgreSQL (default: password, or the SCRAM client key).'),
};

export const poolShape = {
  server_host: t.string('127.0.0.1', 'PostgreSQL host.'),
  server_port: t.int(5432, 'PostgreSQL port.', 1, 65535),
  server_database: t.optString("Database on the server (default: the pool's name)."),
  pool_mode: t.optOneOf(POOL_MODES, 'transaction or session (default: general.pool_mode).'),
  application_name: t.optString(
    'application_name the pooler\'s server connections log in with (default: none, as a client that sends none has; in transaction mode each client\'s own is set on the server it gets: docs/pooler.md, "Session parameters in transaction mode").',
  ),
  auth_user: t.optString('auth_query for this database runs as this user (default: general.auth_user).'),
  auth_password: t.optString('Password of auth_user for this database (default: general.auth_password).'),
  max_db_connections: t.int(
    0,
    'Server connections of all users of this database together (0: no cap beyond each user\'s pool_size). Connects in flight and connections being closed for another user count too, so pg_stat_activity never shows more (docs/pooler.md, "The pool coordinator").',
    0,
    1_000_000,
  ),
  reserve_pool_size: t.int(
    0,
    'Connections allowed above max_db_connections for a client that waited reserve_pool_timeout. A reserve connection is closed when it comes back and nobody of its pool waits.',
    0,
    100_000,
  ),
  reserve_pool_timeout: t.duration(
    5000,
    'A client waiting this long for a server of a database at max_db_connections may use the reserve.',
  ),
  min_guaranteed_pool_size: t.int(
    0,
    'Server connections of each user that are never closed to make room for another user of the database.',
    0,
    100_000,
  ),
  min_connection_lifetime: t.duration(
    5000,
    'An idle server connection younger than this is never closed to make room for another user.',
  ),
  users: t.list(userShape),
};

export const generalShape = {
  host: restartOnly(t.string('0.0.0.0', 'Address the pooler listens on.')),
  port: restartOnly(t.int(6432, 'Port the pooler listens on.', 0, 65535)),
  admin_username: t.string(
    'admin',
    'User of the admin console (database tidepool or pgbouncer) and of Basic auth on the web listener.',
  ),
  admin_password: t.string('', 'Password of the admin user. Empty: admin console refused.'),
  pool_mode: t.oneOf(POOL_MODES, 'transaction', 'Default pool mode.'),
  auth_type: t.oneOf(
    ['scram-sha-256', 'md5', 'plain', 'trust'] as const,
    'scram-sha-256',
    'How clients prove a plaintext password; md5 and SCRAM secrets always use their own method, an empty password means trust.',
  ),
  max_connections: t.int(
    10_000,
    'Client connections accepted at once, logins in progress included (PgBouncer: max_client_conn); the next one gets SQLSTATE 53300 at once.',
    1,
    1_000_000,
  ),
  client_login_timeout: t.duration(
    60_000,
    'A client not logged in this long after its connection was accepted is closed (PgBouncer\'s name and default; PostgreSQL: authentication_timeout): partial startup packets, answered SSLRequests, TLS handshakes, password exchanges, slow senders. Total time, not idle time. Before a startup packet or mid-TLS the socket is closed without a word (as PostgreSQL does); after it, FATAL 08P01 "canceling authentication due to timeout" (as PgBouncer). Counted and logged at warn once per 10 s with the count. 0: off.',
  ),
  max_message_size: t.size(256 * 1024 * 1024, 'Largest protocol message accepted from a client; beyond: 08P01.'),
  connect_timeout: t.duration(3000, 'Time to connect and log in to PostgreSQL.'),
  server_login_retry: t.duration(
    1000,
    'After a server connect or login fails, the pool starts no other one for this long; meanwhile a client that needs a server while the pool has none gets the last error at once ("server login has been failing, cached error: ...", as PgBouncer), so an unreachable PostgreSQL sees one attempt per pool per period, not one per client. PgBouncer\'s name; its default is 15 s, tidepool\'s 1 s so a restarted PostgreSQL is used within a second. RECONNECT and a RELOAD that changes the server end the wait. 0: retry at once.',
  ),
  query_wait_timeout: t.duration(5000, 'A client waiting this long for a server gets an error (0: forever).'),
  idle_timeout: t.duration(600_000, 'Idle server connections are closed after this (0: never).'),
  server_lifetime: t.duration(
    1_200_000,
    'Server connections are closed after this, with up to 10% jitter (0: never). While clients use the pool, expired servers are retired one at a time, each replacement connect started as the old one closes.',
  ),
  shutdown_timeout: t.duration(10_000, 'On SIGTERM or SHUTDOWN, time given to running transactions.'),
  takeover_socket: restartOnly(
    t.string(
      '',
      'Unix socket on which the running `tidepool pooler` process hands its listening sockets (pooler port, web port) to a new one started with --takeover, then its client and server connections as each comes between transactions, while this one shuts down as on SIGTERM (docs/pooler.md, "Upgrading without dropping connections"). Empty: .tidepool-<port>.takeover beside the config file. Only processes of the same user (or root) are answered.',
    ),
  ),
  max_concurrent_connects: t.int(4, 'Backend connects in progress at once per pool.', 1, 1000),
  server_reset_query: t.string('DISCARD ALL', 'Sent when a session-mode client leaves.'),
  track_extra_parameters: t.string(
    'IntervalStyle',
    'Transaction mode: session parameters followed per client besides client_encoding, DateStyle, TimeZone, standard_conforming_strings, application_name and search_path (comma-separated; PgBouncer\'s name and default; docs/pooler.md, "Session parameters in transaction mode"). Parameters a client SETs are followed too; RELOAD applies the list to transactions that start afterwards.',
  ),
  prepared_statements: restartOnly(
    t.bool(
      true,
      'Transaction mode: prepared statements (protocol Parse and SQL PREPARE) follow each client from server to server, and unnamed Parses are cached per server (docs/pooler.md, "Prepared statements"). false: bytes pass through as they are.',
    ),
  ),
  prepared_statements_cache_size: restartOnly(
    t.int(8192, 'Query texts a pool keeps for reuse once no client and no server holds them.', 0, 10_000_000),
  ),
  server_prepared_statements_cache_size: restartOnly(
    t.int(
      256,
      'Statements kept prepared on each server connection (LRU; an evicted one is closed on the server before the next Sync).',
      1,
      1_000_000,
    ),
  ),
  stats_period: t.duration(
    15_000,
    'Period of avg_* values in SHOW STATS and of the rates in /api/apps and the overview; percentiles cover the last complete period plus the current one.',
  ),
  query_stats_size: t.int(
    1000,
    'Simple-protocol (Query message) fingerprints kept for /api/top/queries, literals replaced by ? (docs/pooler.md, "Top queries"); when the table is full a new fingerprint replaces the least counted one. 0: not recorded. RELOAD applies a new size (the table starts afresh).',
    0,
    1_000_000,
  ),
  tcp_no_delay: t.bool(true, 'TCP_NODELAY on client and server sockets.'),
  tcp_defer_accept: restartOnly(
    t.bool(
      true,
      'TCP_DEFER_ACCEPT on the listening socket (Linux; 45 s, as PgBouncer, whose default is also on): the kernel hands the pooler a client once its first bytes (SSLRequest or startup packet) arrived, so accepting it and reading its startup take one wake-up. A client that connects and sends nothing is accepted after 45 s (its login timeout starts then). Applies when the native relay accepts clients (the default; not with [native] accept = false, the JavaScript relay or server_tls_sslmode other than disable, where Node accepts them).',
    ),
  ),
  auth_user: t.string(
    '',
    'User that runs auth_query for clients whose user is not listed in the pool; empty: auth_query off. Per pool: auth_user and auth_password in [pools.<database>] (docs/pooler.md, "Users from PostgreSQL").',
  ),
  auth_password: t.string('', 'Password of auth_user (plaintext or md5 secret, as PostgreSQL asks).'),
  auth_query: t.string(
    'SELECT usename, passwd FROM pg_shadow WHERE usename=$1',
    'Query returning (user name, secret) for $1; PgBouncer recommends a SECURITY DEFINER function.',
  ),
  auth_query_pool_size: t.int(20, 'Server connections of the pool made for each user found by auth_query.', 1, 100_000),
  auth_query_cache_ttl: t.duration(
    60_000,
    'How long a fetched secret (or "no such user") is reused before auth_query runs again.',
  ),
  auth_query_cache_size: t.int(10_000, 'Secrets cached per database at most (oldest dropped first).', 1, 10_000_000),
  auth_query_rate: t.int(
    20,
    'auth_query lookups per second per database at most (also the burst); beyond: 53300 at once.',
    1,
    1_000_000,
  ),
  auth_hba_file: t.string(
    '',
    'A pg_hba.conf-format file: the first line matching a client (type, database, user, address, TLS) decides its method (trust, reject, md5, scram-sha-256, password, cert); empty: no rules (docs/pooler.md, "Host-based rules"). Re-read on RELOAD.',
  ),
  client_tls_sslmode: t.oneOf(
    TLS_MODES,
    'disable',
    'TLS toward clients (docs/pooler.md, "TLS"): disable (SSLRequest answered N), allow/prefer (TLS when the client asks), require (plaintext refused, 28000), verify-ca/verify-full (a client certificate signed by client_tls_ca_file; verify-full: its CN is the user name).',
  ),
  client_tls_key_file: t.string(
    '',
    'PEM private key the pooler presents to clients; required unless client_tls_sslmode is disable. Re-read on RELOAD.',
  ),
  client_tls_cert_file: t.string(
    '',
    'PEM certificate (chain) the pooler presents to clients; required unless client_tls_sslmode is disable. Re-read on RELOAD.',
  ),
  client_tls_ca_file: t.string(
    '',
    'PEM CA certificates that client certificates are checked against; required by verify-ca and verify-full, empty: none asked for. Re-read on RELOAD.',
  ),
  client_tls_protocols: t.string(
    'secure',
    'TLS versions for clients: "secure" (tlsv1.2,tlsv1.3), "all", "legacy", or a list such as "tlsv1.2,tlsv1.3".',
  ),
  client_tls_ciphers: t.string(
    'default',
    'OpenSSL cipher list for clients; "default", "secure", "normal" and "fast" keep Node\'s defaults, "all" allows all.',
  ),
  server_tls_sslmode: t.oneOf(
    TLS_MODES,
    'disable',
    "TLS toward PostgreSQL, as libpq's sslmode: disable, allow (plaintext, TLS if refused), prefer (TLS if offered), require, verify-ca (certificate chain against server_tls_ca_file), verify-full (and the host name).",
  ),
  server_tls_ca_file: t.string(
    '',
    "PEM CA certificates PostgreSQL's certificate is checked against (verify-ca, verify-full); empty: the system's. Re-read on RELOAD.",
  ),
  server_tls_key_file: t.string(
    '',
    'PEM private key of the client certificate the pooler shows PostgreSQL (optional; with server_tls_cert_file). Re-read on RELOAD.',
  ),
  server_tls_cert_file: t.string(
    '',
    'PEM client certificate the pooler shows PostgreSQL (optional; with server_tls_key_file). Re-read on RELOAD.',
  ),
  server_tls_protocols: t.string('secure', 'TLS versions toward PostgreSQL, as client_tls_protocols.'),
  server_tls_ciphers: t.string('default', 'OpenSSL cipher list toward PostgreSQL, as client_tls_ciphers.'),
  log_level: t.oneOf(LOG_LEVELS, 'info', 'Log level; SET log_level changes it at run time.'),
  log_format: t.oneOf(['logfmt', 'json'] as const, 'logfmt', 'Process log lines: logfmt or JSON lines.'),
};

export const webShape = {
  enabled: restartOnly(t.bool(false, 'Whether the web listener binds at all; /metrics works whatever ui says.')),
  host: restartOnly(t.string('0.0.0.0', 'Bind address.')),
  port: restartOnly(t.int(9127, 'Bind port.', 0, 65535)),
  ui: t.bool(false, 'Serve the console (SPA on /) and /api/*.'),
  ui_anonymous: t.bool(false, 'Public reads of the API accept requests without credentials.'),
  log_tap_max_entries: t.int(
    8192,
    'Size of the log ring behind /api/logs; 0 disables it (404). RELOAD applies a new size.',
    0,
    10_000_000,
  ),
  sso_enabled: t.bool(false, 'Validate JWTs. Off: only Anonymous and Admin (Basic) exist and tokens are ignored.'),
  sso_proxy_url: t.optString(
    'URL the SPA sends the browser to for "Sign in via SSO" (<url>?redirect_to=<href>). The server never calls it.',
  ),
  sso_public_key_file: t.optString('PEM file with the RSA public key; read at start and on RELOAD.'),
  sso_audience: t.stringList([], 'Accepted aud values (one must match); required when sso_enabled.'),
  sso_allowed_users: t.stringList(['*'], 'Allowlist on preferred_username (else sub); "*" accepts all.'),
  sso_groups_claim: t.string('groups', 'Claim carrying group memberships.'),
  sso_admin_groups: t.stringList([], 'Groups that promote an SSO user to Admin.'),
  sso_require_https: t.bool(
    false,
    'SSO credentials count only over HTTPS, i.e. from a trusted proxy sending X-Forwarded-Proto: https.',
  ),
  trusted_proxies: t.stringList(
    [],
    'CIDR ranges (or single addresses) whose X-Forwarded-For, Forwarded and X-Forwarded-Proto are believed.',
  ),
  headers_timeout: restartOnly(
    t.duration(
      10_000,
      "A request's headers must arrive within this, else the connection is closed (slowloris; Node's headersTimeout).",
    ),
  ),
  request_timeout: restartOnly(
    t.duration(
      30_000,
      'A whole request (headers and body) must arrive within this, else 408 and a close (at least headers_timeout).',
    ),
  ),
  keep_alive_timeout: restartOnly(t.duration(5_000, 'An idle keep-alive connection is closed after this.')),
  idle_timeout: restartOnly(
    t.duration(
      300_000,
      "A connection with no traffic either way for this long is closed (fastify's connectionTimeout; 0: never).",
    ),
  ),
};

export const logsShape = {
  ship_to: t.string(
    '',
    "Log store URL (http:// or https://) that receives the pooler's log records over its bulk API (a path prefix is kept: <ship_to>/_bulk; user:password@ becomes Basic auth). Empty: shipping off.",
  ),
  ship_index: t.string('tidepool-pooler', 'Index named in every bulk action line ({"index":{"_index":...}}).'),
  ship_batch_size: t.int(500, 'Records per bulk request at most.', 1, 100_000),
  ship_flush_interval: t.duration(
    1000,
    'A batch smaller than ship_batch_size is sent this long after its first record.',
  ),
  ship_queue_size: t.int(
    10_000,
    'Records held in memory while the log store is slow or unreachable (at least ship_batch_size); when full, the oldest are dropped.',
    1,
    10_000_000,
  ),
  ship_timeout: t.duration(
    5000,
    'Time one bulk request may take before it counts as failed; also the most a shutdown (SIGTERM, SHUTDOWN) waits for the queue to drain.',
  ),
  ship_backoff_max: t.duration(
    10_000,
    'Longest wait between retries while the log store is unreachable (from 250ms, doubling).',
  ),
  explorer_url: t.string(
    '',
    'Address of the log explorer (tidepool logstore-ui) that shows these records, e.g. http://127.0.0.1:5555; the console links pools and clients to their records there. Empty: no links.',
  ),
};

/** Switches that select the native addon's code paths, each with the environment variable that overrides it (for
 * tests and one-off runs; a bad value is a config error like a bad key). */
export const nativeShape = {
  relay: restartOnly(
    t.bool(
      true,
      'The native relay carries logged-in clients and their servers when the addon is built (Linux, macOS); false: the JavaScript relay carries every socket, and accept, login and lend are off too. Env: TIDEPOOL_NATIVE_RELAY=0|1.',
    ),
  ),
  accept: restartOnly(
    t.bool(
      true,
      'When the native relay carries every pool, it accepts clients on the listening socket itself (no Node socket per login); false: net.Server accepts them. Env: TIDEPOOL_NATIVE_ACCEPT=0|1.',
    ),
  ),
  login: restartOnly(
    t.bool(
      true,
      "The native relay runs md5 and SCRAM logins of transaction-mode pools itself once a pool knows its server's parameters (no auth_hba_file, no client TLS required). Env: TIDEPOOL_NATIVE_LOGIN=0|1.",
    ),
  ),
  lend: restartOnly(
    t.bool(
      true,
      'Idle servers of the pools whose logins the native relay runs are lent to it, so a client that logs in, runs its transactions and leaves costs JavaScript nothing. Off at log_level "debug" or "trace", where every login is logged. Env: TIDEPOOL_NATIVE_LEND=0|1.',
    ),
  ),
  relay_events: restartOnly(
    t.int(
      2048,
      'Events the native relay hands JavaScript per round (five Int32 slots each); what does not fit waits in the relay, in order. Sized once, by the first pooler of the process. Env: TIDEPOOL_RELAY_EVENTS.',
      3,
      65_536,
    ),
  ),
  prepared_relay: restartOnly(
    t.oneOf(
      ['native', 'js'] as const,
      'native',
      'Relay of transaction-mode pools with prepared_statements: "native" (the relay\'s lane answers what it can, the rewriter the rest) or "js" (every byte through the JavaScript rewriter; client TLS is then Node\'s and the relay neither accepts nor logs in). Env: TIDEPOOL_REWRITE_RELAY=native|js.',
    ),
  ),
};

/** The environment variable that overrides each [native] key. */
export const NATIVE_ENV: { readonly [K in keyof typeof nativeShape]: string } = {
  relay: 'TIDEPOOL_NATIVE_RELAY',
  accept: 'TIDEPOOL_NATIVE_ACCEPT',
  login: 'TIDEPOOL_NATIVE_LOGIN',
  lend: 'TIDEPOOL_NATIVE_LEND',
  relay_events: 'TIDEPOOL_RELAY_EVENTS',
  prepared_relay: 'TIDEPOOL_REWRITE_RELAY',
};

export const poolerShape = {
  general: t.section(generalShape),
  web: t.section(webShape),
  logs: t.section(logsShape),
  native: t.section(nativeShape),
  pools: t.table(poolShape, 'a table of pools ([pools.<database>])', 'database'),
};

export type PoolerConfig = InferShape<typeof poolerShape>;
export type PoolConfig = PoolerConfig['pools'][string];
export type UserConfig = PoolConfig['users'][number];
export type WebConfig = PoolerConfig['web'];
export type LogsConfig = PoolerConfig['logs'];
export type NativeConfig = PoolerConfig['native'];

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: Problem[],
  ) {
    super(`${file}: ${problems.length} problem(s)\n${problems.map((p) => `  ${formatProblem(p)}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function semanticChecks(cfg: PoolerConfig, problems: Problem[]): void {
  for (const [name, pool] of Object.entries(cfg.pools)) {
    if (name === 'tidepool' || name === 'pgbouncer') {
      problems.push({
        path: `pools.${name}`,
        expected: "a database name other than the admin console's",
        found: JSON.stringify(name),
      });
    }
    const seen = new Set<string>();
    pool.users.forEach((u, i) => {
      if (seen.has(u.username))
        problems.push({
          path: `pools.${name}.users[${i}].username`,
          expected: 'a user listed once per pool',
          found: JSON.stringify(u.username),
        });
      seen.add(u.username);
      if (u.min_pool_size > u.pool_size)
        problems.push({
          path: `pools.${name}.users[${i}].min_pool_size`,
          expected: `at most pool_size (${u.pool_size})`,
          found: String(u.min_pool_size),
        });
      if (
        u.password.startsWith('SCRAM-SHA-256$') &&
        !/^SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/.test(u.password)
      )
        problems.push({
          path: `pools.${name}.users[${i}].password`,
          expected: 'SCRAM-SHA-256$<iter>:<salt>$<stored>:<server>',
          found: 'a malformed SCRAM secret',
        });
    });
  }
  cfg.web.trusted_proxies.forEach((cidr, i) => {
    if (!isCidr(cidr))
      problems.push({
        path: `web.trusted_proxies[${i}]`,
        expected: 'an IP address or CIDR range ("10.0.0.0/8", "::1/128")',
        found: JSON.stringify(cidr),
      });
  });
  logsChecks(cfg.logs, problems);
  tlsChecks(cfg.general, problems);
  paramChecks(cfg.general, problems);
}

/** The TLS keys that must come together; files themselves are read by pooler/tls/tls-settings.ts. */
function paramChecks(g: PoolerConfig['general'], problems: Problem[]): void {
  const bad: string[] = [];
  parseParamList(g.track_extra_parameters, bad);
  if (bad.length)
    problems.push({
      path: 'general.track_extra_parameters',
      expected: 'a comma-separated list of parameter names ("IntervalStyle, myapp.tenant")',
      found: JSON.stringify(g.track_extra_parameters),
    });
}

function tlsChecks(g: PoolerConfig['general'], problems: Problem[]): void {
  if (g.client_tls_sslmode !== 'disable') {
    for (const key of ['client_tls_key_file', 'client_tls_cert_file'] as const) {
      if (!g[key])
        problems.push({
          path: `general.${key}`,
          expected: `a PEM file: client_tls_sslmode is ${g.client_tls_sslmode}`,
          found: '""',
        });
    }
  }
  if ((g.client_tls_sslmode === 'verify-ca' || g.client_tls_sslmode === 'verify-full') && !g.client_tls_ca_file) {
    problems.push({
      path: 'general.client_tls_ca_file',
      expected: `a PEM file of the CA that signs client certificates: client_tls_sslmode is ${g.client_tls_sslmode}`,
      found: '""',
    });
  }
  if (!g.server_tls_key_file !== !g.server_tls_cert_file) {
    problems.push({
      path: g.server_tls_key_file ? 'general.server_tls_cert_file' : 'general.server_tls_key_file',
      expected: 'server_tls_key_file and server_tls_cert_file together',
      found: '""',
    });
  }
  for (const key of ['client_tls_protocols', 'server_tls_protocols'] as const) {
    const r = parseTlsProtocols(g[key]);
    if (typeof r === 'string')
      problems.push({
        path: `general.${key}`,
        expected: '"secure", "all", "legacy" or a list of tlsv1.0, tlsv1.1, tlsv1.2, tlsv1.3',
        found: JSON.stringify(g[key]),
        hint: r,
      });
  }
}

const TLS_VERSIONS = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] as const;
export type TlsVersion = (typeof TLS_VERSIONS)[number];

/** PgBouncer's tls_protocols as Node's minVersion/maxVersion (Node takes a range: a list with a gap gets its ends),
 * or why it cannot be read. */
export function parseTlsProtocols(text: string): { min: TlsVersion; max: TlsVersion } | string {
  const names: Record<string, number> = { 'tlsv1.0': 0, tlsv1: 0, 'tlsv1.1': 1, 'tlsv1.2': 2, 'tlsv1.3': 3 };
  const picked = new Set<number>();
  for (const part of text
    .toLowerCase()
    .split(/[\s,:]+/)
    .filter(Boolean)) {
    if (part === 'secure') [2, 3].forEach((v) => picked.add(v));
    else if (part === 'all' || part === 'legacy') [0, 1, 2, 3].forEach((v) => picked.add(v));
    else if (part in names) picked.add(names[part]!);
    else return `unknown protocol ${JSON.stringify(part)}`;
  }
  if (!picked.size) return 'no protocol named';
  return { min: TLS_VERSIONS[Math.min(...picked)]!, max: TLS_VERSIONS[Math.max(...picked)]! };
}

/** Elasticsearch index names: no uppercase, backslash, / * ? " < > | , # : or space; not starting with - _ +; not . or ..; 255 at most. */
const INDEX_NAME = /^(?![-_+])(?!\.{1,2}$)[^A-Z\\/*?"<>|,#: ]{1,255}$/;

function logsChecks(logs: PoolerConfig['logs'], problems: Problem[]): void {
  const urlProblem = logs.ship_to === '' ? null : shipUrlProblem(logs.ship_to);
  if (urlProblem) {
    problems.push({
      path: 'logs.ship_to',
      expected: 'an http:// or https:// URL of a log store ("http://127.0.0.1:9002"), or "" for off',
      found: JSON.stringify(logs.ship_to),
      hint: urlProblem,
    });
  }
  const explorerProblem = logs.explorer_url === '' ? null : shipUrlProblem(logs.explorer_url);
  if (explorerProblem) {
    problems.push({
      path: 'logs.explorer_url',
      expected: 'an http:// or https:// URL of the log explorer ("http://127.0.0.1:5555"), or "" for no links',
      found: JSON.stringify(logs.explorer_url),
      hint: explorerProblem,
    });
  }
  if (!INDEX_NAME.test(logs.ship_index)) {
    problems.push({
      path: 'logs.ship_index',
      expected:
        'an index name: lowercase, without spaces or \\ / * ? " < > | , # :, not starting with - _ +, at most 255 characters',
      found: JSON.stringify(logs.ship_index),
    });
  }
  if (logs.ship_queue_size < logs.ship_batch_size) {
    problems.push({
      path: 'logs.ship_queue_size',
      expected: `at least ship_batch_size (${logs.ship_batch_size})`,
      found: String(logs.ship_queue_size),
    });
  }
  for (const key of ['ship_flush_interval', 'ship_timeout', 'ship_backoff_max'] as const) {
    if (logs[key] < 1)
      problems.push({ path: `logs.${key}`, expected: 'a duration above zero', found: String(logs[key]) });
  }
}

/** Why `url` cannot be a log store address, or null when it can. */
function shipUrlProblem(url: string): string | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return `no scheme: write "http://${url}"`;
  if (!URL.canParse(url)) return 'it does not parse as a URL';
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `the scheme is ${u.protocol.slice(0, -1)}`;
  if (u.hostname === '') return 'it names no host';
  if (u.search !== '' || u.hash !== '') return 'a query or fragment is not allowed';
  return null;
}

function isCidr(s: string): boolean {
  const [addr, prefix, ...rest] = s.split('/');
  const family = isIP(addr ?? '');
  if (!family || rest.length) return false;
  if (prefix === undefined) return true;
  const n = Number(prefix);
  return /^\d+$/.test(prefix) && n >= 0 && n <= (family === 4 ? 32 : 128);
}

/** Environment variables the config reads (NATIVE_ENV); `process.env` fits. */
export type ConfigEnv = Readonly<Record<string, string | undefined>>;

const ENV_BOOLS: Readonly<Record<string, boolean>> = {
  0: false,
  false: false,
  off: false,
  1: true,
  true: true,
  on: true,
};

/** The [native] section with each set NATIVE_ENV variable over its key; a value that does not read as the key's type
 * is a problem named after the variable (the file's own value is validated all the same). */
function withEnvOverrides(config: PoolerConfig, env: ConfigEnv, problems: Problem[]): PoolerConfig {
  const entries = Object.entries(NATIVE_ENV).filter(([, name]) => (env[name] ?? '') !== '');
  if (!entries.length) return config;
  const native: Record<string, unknown> = { ...config.native };
  for (const [key, name] of entries) {
    const text = env[name]!;
    const field = nativeShape[key as keyof typeof nativeShape];
    const value =
      typeof field.default === 'boolean'
        ? ENV_BOOLS[text.toLowerCase()]
        : typeof field.default === 'number'
          ? /^\d+$/.test(text)
            ? Number(text)
            : undefined
          : text;
    const parsed = value === undefined ? null : field.parse(value);
    if (!parsed?.ok) {
      const expected = typeof field.default === 'boolean' ? '0 or 1 (also false/true, off/on)' : field.expected;
      problems.push({ path: `${name} (environment, overrides native.${key})`, expected, found: JSON.stringify(text) });
      continue;
    }
    native[key] = parsed.value;
  }
  return Object.freeze({ ...config, native: Object.freeze(native) as NativeConfig });
}

/** Parses and validates TOML text; `[prometheus]` is accepted as a legacy alias of `[web]`. `env`: the NATIVE_ENV
 * variables set override their [native] keys (loadPoolerConfig passes process.env). */
export function parsePoolerConfig(text: string, env: ConfigEnv = {}): { config: PoolerConfig; problems: Problem[] } {
  let raw: Record<string, unknown>;
  try {
    raw = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    const e = err as Error & { line?: number; column?: number };
    return {
      config: validate(poolerShape, {}).value,
      problems: [
        {
          path: e.line ? `line ${e.line}, column ${e.column}` : '(file)',
          expected: 'valid TOML',
          found: e.message.split('\n')[0] ?? 'a syntax error',
        },
      ],
    };
  }
  const extra: Problem[] = [];
  if ('prometheus' in raw) {
    if ('web' in raw)
      extra.push({
        path: 'prometheus',
        expected: 'either [web] or its legacy alias [prometheus], not both',
        found: 'both sections',
      });
    else raw.web = raw.prometheus;
    delete raw.prometheus;
  }
  const { value, problems } = validate(poolerShape, raw);
  problems.push(...extra);
  semanticChecks(value, problems);
  return { config: withEnvOverrides(value, env, problems), problems };
}

/** Reads and validates a config file (with the environment's overrides, NATIVE_ENV); throws ConfigError listing every
 * problem. */
export function loadPoolerConfig(file: string, env: ConfigEnv = process.env): PoolerConfig {
  return loadConfigFile(
    file,
    (text) => parsePoolerConfig(text, env),
    (f, problems) => new ConfigError(f, problems),
  );
}

/** Effective pool mode of a user in a pool. */
export function effectivePoolMode(cfg: PoolerConfig, pool: PoolConfig, user: UserConfig): PoolMode {
  return user.pool_mode ?? pool.pool_mode ?? cfg.general.pool_mode;
}
