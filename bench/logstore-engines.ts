// The embedded engines the log-store benchmark compares with, on the same NDJSON file: DuckDB (typed columns in an
// on-disk file, loaded with read_ndjson; the Appender timed on a second file) and SQLite (better-sqlite3, WAL,
// btree indexes, FTS5 on `request` with the log store's word rules: letters, digits and `_`, lowercased).
// Both run in the bench process, so their CPU is this process's (all threads) while they ingest.
import { DuckDBInstance, timestampValue, type DuckDBConnection } from '@duckdb/node-api';
import Database from 'better-sqlite3';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** One engine under test: what it took to load the documents, its size on disk, and a query runner. */
export interface Engine {
  name: string;
  /** Wall seconds and CPU seconds of the load (indexes included). */
  ingest: { sec: number; cpu: number };
  /** Bytes on disk once loaded and checkpointed. */
  disk(): number;
  /** Runs statements in order and reads every row of each; returns the rows of the last. */
  run(sql: readonly string[]): Promise<unknown[][]>;
  close(): Promise<void>;
}

function cpuNow(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function size(file: string): number {
  let n = 0;
  for (const f of [file, `${file}.wal`, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) n += statSync(f).size;
  return n;
}

const DUCK_COLUMNS =
  "{timestamp: 'TIMESTAMP', clientip: 'VARCHAR', request: 'VARCHAR', status: 'INTEGER', size: 'BIGINT', service: 'VARCHAR'}";
const DUCK_TABLE =
  'CREATE TABLE logs (timestamp TIMESTAMP, clientip VARCHAR, request VARCHAR, status INTEGER, size BIGINT, service VARCHAR)';

async function duckRun(conn: DuckDBConnection, sql: readonly string[]): Promise<unknown[][]> {
  let rows: unknown[][] = [];
  for (const q of sql) rows = (await conn.runAndReadAll(q)).getRows() as unknown[][];
  return rows;
}

/** DuckDB, on-disk: `read_ndjson` into a typed table, then CHECKPOINT (the load's figures include it). */
export async function loadDuckDb(file: string, ndjson: string): Promise<Engine> {
  const instance = await DuckDBInstance.create(file);
  const conn = await instance.connect();
  await conn.run(DUCK_TABLE);
  const c0 = cpuNow();
  const t0 = process.hrtime.bigint();
  await conn.run(
    `INSERT INTO logs SELECT * FROM read_ndjson('${ndjson}', columns = ${DUCK_COLUMNS}, format = 'newline_delimited')`,
  );
  await conn.run('CHECKPOINT');
  const ingest = { sec: Number(process.hrtime.bigint() - t0) / 1e9, cpu: cpuNow() - c0 };
  return {
    name: 'DuckDB',
    ingest,
    disk: () => size(file),
    run: (sql) => duckRun(conn, sql),
    close: async () => {
      conn.closeSync();
      instance.closeSync();
    },
  };
}

/** DuckDB's Appender fed from the NDJSON lines (JSON.parse in JS, one row at a time), into a file of its own. */
export async function duckDbAppender(
  file: string,
  ndjson: string,
): Promise<{ sec: number; cpu: number; rows: number }> {
  const instance = await DuckDBInstance.create(file);
  const conn = await instance.connect();
  await conn.run(DUCK_TABLE);
  const c0 = cpuNow();
  const t0 = process.hrtime.bigint();
  const app = await conn.createAppender('logs');
  let rows = 0;
  for await (const line of createInterface({ input: createReadStream(ndjson), crlfDelay: Infinity })) {
    if (!line) continue;
    const d = JSON.parse(line) as Record<string, string | number>;
    app.appendTimestamp(timestampValue(BigInt(Date.parse(d.timestamp as string)) * 1000n));
    app.appendVarchar(d.clientip as string);
    app.appendVarchar(d.request as string);
    app.appendInteger(d.status as number);
    app.appendBigInt(BigInt(d.size as number));
    app.appendVarchar(d.service as string);
    app.endRow();
    rows++;
  }
  app.closeSync();
  await conn.run('CHECKPOINT');
  const out = { sec: Number(process.hrtime.bigint() - t0) / 1e9, cpu: cpuNow() - c0, rows };
  conn.closeSync();
  instance.closeSync();
  return out;
}

/**
 * SQLite: a typed table with btree indexes on timestamp and status, and an external-content FTS5 index on
 * `request` (unicode61, `_` a token character: the log store's text words), loaded in 5 000-row transactions.
 */
export async function loadSqlite(file: string, ndjson: string): Promise<Engine> {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(
    'CREATE TABLE logs (id INTEGER PRIMARY KEY, timestamp TEXT NOT NULL, clientip TEXT, request TEXT, status INTEGER, size INTEGER, service TEXT)',
  );
  db.exec(
    "CREATE VIRTUAL TABLE logs_fts USING fts5(request, content = 'logs', content_rowid = 'id', tokenize = \"unicode61 tokenchars '_'\")",
  );
  const insert = db.prepare(
    'INSERT INTO logs (timestamp, clientip, request, status, size, service) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const insertFts = db.prepare('INSERT INTO logs_fts (rowid, request) VALUES (?, ?)');
  const batch = db.transaction((docs: Record<string, string | number>[]) => {
    for (const d of docs) {
      const r = insert.run(d.timestamp, d.clientip, d.request, d.status, d.size, d.service);
      insertFts.run(r.lastInsertRowid, d.request);
    }
  });
  const c0 = cpuNow();
  const t0 = process.hrtime.bigint();
  let docs: Record<string, string | number>[] = [];
  for await (const line of createInterface({ input: createReadStream(ndjson), crlfDelay: Infinity })) {
    if (!line) continue;
    docs.push(JSON.parse(line) as Record<string, string | number>);
    if (docs.length === 5000) {
      batch(docs);
      docs = [];
    }
  }
  if (docs.length) batch(docs);
  db.exec('CREATE INDEX logs_ts ON logs (timestamp)');
  db.exec('CREATE INDEX logs_status ON logs (status)');
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const ingest = { sec: Number(process.hrtime.bigint() - t0) / 1e9, cpu: cpuNow() - c0 };
  return {
    name: 'SQLite + FTS5',
    ingest,
    disk: () => size(file),
    run: async (sql) => {
      let rows: unknown[][] = [];
      for (const q of sql) rows = db.prepare(q).raw().all() as unknown[][];
      return rows;
    },
    close: async () => {
      db.close();
    },
  };
}
