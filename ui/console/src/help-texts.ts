// What each metric of the console means, shown by its (i) help button; keys are metric or column names.
export interface HelpEntry {
  name: string;
  text: string;
}

const h = (name: string, text: string): HelpEntry => ({ name, text });

export const HELP: Record<string, HelpEntry> = {
  clients: h(
    'clients',
    "Client connections logged in to the pooler: active (inside a transaction, holding a server, a statement under way), idle in transaction (inside a transaction, holding a server and its locks, running nothing; with the age of the oldest), idle (between transactions) and waiting (want a server, none free yet). SHOW POOLS' cl_active counts the idle-in-transaction ones too; here they are shown apart.",
  ),
  servers: h(
    'servers',
    "Connections from the pooler to PostgreSQL: active (serving a client), idle in transaction (serving a client that sits inside a transaction running nothing), idle (ready in the pool), used (back from a client, being reset), login (being opened). SHOW POOLS' sv_active counts the idle-in-transaction ones too; here they are shown apart.",
  ),
  tps: h(
    'transactions per second',
    'Transactions the pooler saw finish per second over the last stats period, every pool together. A statement outside BEGIN counts as one transaction.',
  ),
  qps: h(
    'queries per second',
    'Queries (simple Query messages and extended-protocol Executes) per second over the last stats period.',
  ),
  latency: h(
    'query latency',
    'Time from a query reaching the pooler to its answer leaving it, as percentiles over recent queries: p50 is the median, p95 and p99 the slow tail. Includes the time waiting for a server.',
  ),
  waiting: h(
    'waiting clients',
    'Clients that want a server and have none yet: the pool is full or paused. Any lasting value means the pool is too small or PostgreSQL too slow.',
  ),
  errors: h(
    'errors',
    'Errors PostgreSQL or the pooler sent to clients (ErrorResponse messages), in total since the start.',
  ),
  errors_per_sec: h(
    'errors per second',
    "Errors sent to clients per second: the pooler's own rate, or the change of the error total between two polls.",
  ),
  pools: h('pools', 'One pool per user@database pair; a paused pool hands out no servers until RESUME.'),
  process: h('process', "The pooler's operating-system process: its pid, version and time since start."),
  memory: h('memory', 'Resident set size of the pooler process, and the part of the JavaScript heap in use.'),
  cpu: h(
    'CPU',
    'CPU time the pooler used between two polls, as a share of one core; the event-loop delay shows how late timers ran (high values mean the pooler is overloaded).',
  ),
  saturation: h(
    'saturation',
    'Active servers divided by the pool size: at 100% every server is busy and new transactions wait.',
  ),
  pool_size: h('pool size', 'Most server connections the pool opens for this user@database.'),
  cl_active: h('active clients', 'Clients inside a transaction, holding a server.'),
  cl_idle: h('idle clients', 'Clients connected between transactions (they hold no server in transaction mode).'),
  cl_waiting: h('waiting clients', 'Clients waiting for a server.'),
  cl_pinned: h(
    'pinned clients',
    'Transaction-mode clients kept on their server until they disconnect, because they hold session state that cannot move to another server (LISTEN, advisory locks, temporary tables, WITH HOLD cursors, SQL PREPARE, LOAD). Their servers do not count against the pool size.',
  ),
  cl_idle_in_transaction: h(
    'idle-in-transaction clients',
    'Clients inside a transaction with nothing running: they hold a server (and PostgreSQL locks) that no other client can use. Counted in cl_active too. A pile of them that grows is the classic pooler incident: an application that forgot to COMMIT.',
  ),
  sv_idle_in_transaction: h(
    'idle-in-transaction servers',
    'Server connections whose client is idle in transaction. Counted in sv_active too.',
  ),
  max_idle_xact_age_ms: h(
    'oldest idle transaction',
    'Age of the oldest transaction a client of the pool holds open while running nothing (since its first statement); blank when there is none.',
  ),
  sv_active: h('active servers', 'Server connections serving a client.'),
  sv_idle: h('idle servers', 'Server connections ready for the next client.'),
  sv_used: h('used servers', 'Server connections back from a client and not yet reusable.'),
  sv_login: h('login servers', 'Server connections being opened and authenticated.'),
  oldest_active_age_ms: h(
    'oldest active',
    "How long the pool's longest-serving active server has been with its client, in milliseconds: a stuck transaction shows here first.",
  ),
  maxwait: h('max wait', 'How long the longest-waiting client of the pool has waited, in seconds.'),
  avg_xact_time: h(
    'average transaction time',
    'Mean transaction duration over the last stats period, in microseconds.',
  ),
  avg_query_time: h('average query time', 'Mean query duration over the last stats period, in microseconds.'),
  query_p95: h('query p95', "The duration 95% of the pool's recent queries stayed under."),
  client_qps: h(
    'client queries per second',
    "Change of the client's query count over the pooler's last window (at least 1 s between two reads of /api/clients), divided by its length. Computed by the pooler, so the table sorts by it.",
  ),
  client_tps: h(
    'client transactions per second',
    "Change of the client's transaction count over the pooler's last window (at least 1 s between two reads of /api/clients), divided by its length. Computed by the pooler, so the table sorts by it.",
  ),
  client_id: h('client id', "The pooler's number for this client connection, as SHOW CLIENTS lists it."),
  server_id: h('server id', "The pooler's number for this server connection, as SHOW SERVERS lists it."),
  wait: h(
    'wait',
    'Seconds a waiting client has waited for a server so far; for an idle server, seconds since it was last used.',
  ),
  wait_reason: h('wait reason', 'Why a client waits: its pool is paused, or every server of the pool is busy.'),
  age_seconds: h('age', 'Seconds since the connection was opened.'),
  server_process_id: h('PostgreSQL pid', 'Process id of the PostgreSQL backend: join it with pg_stat_activity.pid.'),
  client_query_age: h('query age', "How long the client's current query has been running (active clients only)."),
  xact_age: h(
    'transaction age',
    'How long the transaction under way has been open (since its first statement). An idle-in-transaction client holds its server and its locks while running nothing.',
  ),
  query_age: h('query age', 'How long the server has been serving its current client.'),
  prepare_cache: h(
    'prepare cache',
    'Statements the server already had prepared when a client asked (hits) and those the pooler had to prepare first (misses).',
  ),
  hit_rate: h(
    'hit rate',
    'Share of statement uses the servers answered from their prepared-statement cache: hits / (hits + misses).',
  ),
  count_used: h('uses', 'How many times clients used this prepared statement.'),
  statement_hit_rate: h(
    'statement hit rate',
    'For this statement: uses that found it already prepared on the server, out of all its uses that reached a server: hits / (hits + misses).',
  ),
  statement_hits: h(
    'statement cache hits',
    'Uses of this statement (Parse or Bind) that found it already prepared on the server the client got.',
  ),
  statement_misses: h(
    'statement cache misses',
    'Uses of this statement that had to prepare it on the server first (its first use there, or after eviction or RECONNECT).',
  ),
  interner: h(
    'SQL-text cache',
    'Each distinct SQL text of a prepared statement is stored once, however many clients and servers use it.',
  ),
  app_errors: h(
    'errors per 1 000 queries',
    "Errors sent to the application's clients for every 1 000 queries they ran.",
  ),
  changeable: h('RELOAD changes it', 'yes: RELOAD applies a new value at once; no: the pooler must restart.'),
  events: h(
    'admin events',
    'What operators and the pooler did lately: pauses, resumes, reloads, kills, failed logins and connects, exhausted pools.',
  ),
  total_xact_count: h('transactions', 'Transactions finished since the start.'),
  total_query_count: h('queries', 'Queries finished since the start.'),
  total_errors: h('errors', 'Errors sent to clients since the start.'),
  bytes: h('bytes', 'Bytes received from clients and sent to them through this pool.'),
};
