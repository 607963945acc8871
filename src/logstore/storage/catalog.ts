// A shard's catalog (SQLite): its fractions, their state, time bounds and sizes.
import Database from 'better-sqlite3';

export type FractionState = 'active' | 'sealed';

export interface FractionRow {
  name: string;
  state: FractionState;
  min_time: number;
  max_time: number;
  docs: number;
  raw_bytes: number;
  disk_bytes: number;
}

export class Catalog {
  private readonly db: Database.Database;

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS fractions (
      name TEXT PRIMARY KEY, state TEXT NOT NULL, min_time REAL NOT NULL, max_time REAL NOT NULL,
      docs INTEGER NOT NULL, raw_bytes INTEGER NOT NULL, disk_bytes INTEGER NOT NULL, created REAL NOT NULL)`);
  }

  list(): FractionRow[] {
    return this.db
      .prepare('SELECT name, state, min_time, max_time, docs, raw_bytes, disk_bytes FROM fractions ORDER BY name')
      .all() as FractionRow[];
  }

  addActive(name: string): void {
    this.db.prepare("INSERT OR IGNORE INTO fractions VALUES (?, 'active', 0, 0, 0, 0, 0, ?)").run(name, Date.now());
  }

  markSealed(row: Omit<FractionRow, 'state'>): void {
    this.db
      .prepare(
        "UPDATE fractions SET state = 'sealed', min_time = ?, max_time = ?, docs = ?, raw_bytes = ?, disk_bytes = ? WHERE name = ?",
      )
      .run(row.min_time, row.max_time, row.docs, row.raw_bytes, row.disk_bytes, row.name);
  }

  /** Marks `row` sealed and adds `next` as the active fraction, in one transaction: both or neither. */
  seal(row: Omit<FractionRow, 'state'>, next: string): void {
    this.db.transaction(() => {
      this.markSealed(row);
      this.addActive(next);
    })();
  }

  remove(name: string): void {
    this.db.prepare('DELETE FROM fractions WHERE name = ?').run(name);
  }

  close(): void {
    this.db.close();
  }
}
