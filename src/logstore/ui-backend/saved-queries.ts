// Saved queries per user name, kept in SQLite (better-sqlite3): a name, the seq-ql text and the view (range, columns).
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { isDiskFull } from '../storage/wal.js';
import { badRequest, UiError } from './errors.js';
import type { Body } from './requests.js';

export interface SavedQuery {
  id: number;
  name: string;
  query: string;
  /** The view as the explorer keeps it in its URL: range, columns, ... (a JSON object). */
  view: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

interface Row {
  id: number;
  name: string;
  query: string;
  view: string;
  created_at: string;
  updated_at: string;
}

const MAX_NAME = 200;
const MAX_QUERY = 64 * 1024;
const MAX_VIEW = 16 * 1024;

export class SavedQueries {
  private readonly db: Database.Database;
  /** The current full-disk episode (since when, what failed), or null. */
  private full: { since: string; detail: string } | null = null;

  constructor(
    private readonly file: string,
    private readonly log?: Logger,
  ) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS saved_queries (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      user TEXT NOT NULL,
      name TEXT NOT NULL,
      query TEXT NOT NULL,
      view TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (user, name)
    )`);
  }

  private static row(r: Row): SavedQuery {
    return {
      id: r.id,
      name: r.name,
      query: r.query,
      view: JSON.parse(r.view) as Record<string, unknown>,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  /** Why the saved queries cannot be written now (a full disk), or null: the UI backend's /health reports it. */
  problem(): string | null {
    return this.full ? `saved queries: disk full since ${this.full.since} (${this.full.detail})` : null;
  }

  /**
   * Runs a write; a full disk (SQLITE_FULL, or an SQLite I/O error with the disk nearly full) is logged at error
   * once per episode and answered 507 disk_full (nothing was written: SQLite rolled the statement back).
   */
  private write<T>(fn: () => T): T {
    let out: T;
    try {
      out = fn();
    } catch (err) {
      if (!isDiskFull(err, path.dirname(this.file))) throw err;
      const code = (err as { code?: string }).code ?? 'error';
      if (!this.full) {
        this.log?.error(
          { file: this.file, code, err: (err as Error).message },
          'disk full: saved queries cannot be written (answered 507) until there is room again',
        );
        this.full = { since: new Date().toISOString(), detail: code };
      }
      throw new UiError(
        'disk_full',
        `the saved query was not written: the disk under ${this.file} is full (${code}); try again once there is room`,
      );
    }
    if (this.full) {
      this.log?.warn({ since: this.full.since }, 'disk full episode over: saved queries are written again');
      this.full = null;
    }
    return out;
  }

  list(user: string): SavedQuery[] {
    return (
      this.db
        .prepare('SELECT id, name, query, view, created_at, updated_at FROM saved_queries WHERE user = ? ORDER BY name')
        .all(user) as Row[]
    ).map(SavedQueries.row);
  }

  /** Creates the user's query of that name, or replaces it (a name is unique per user). */
  save(user: string, b: Body): SavedQuery {
    if (typeof b.name !== 'string' || b.name.trim() === '' || b.name.length > MAX_NAME)
      throw badRequest(`name must be a non-empty string of at most ${MAX_NAME} characters`, { field: 'name' });
    if (typeof b.query !== 'string' || b.query.length > MAX_QUERY)
      throw badRequest(`query must be a seq-ql string of at most ${MAX_QUERY} characters`, { field: 'query' });
    const view = b.view ?? {};
    if (typeof view !== 'object' || view === null || Array.isArray(view))
      throw badRequest('view must be a JSON object', { field: 'view' });
    const viewText = JSON.stringify(view);
    if (viewText.length > MAX_VIEW)
      throw badRequest(`view must be at most ${MAX_VIEW} bytes of JSON`, { field: 'view' });
    const now = new Date().toISOString();
    const name = b.name.trim();
    const query = b.query;
    // In an explicit transaction: an INSERT ... RETURNING read with .get() hands back its row at the first step, and
    // better-sqlite3 drops the error of the implicit commit that follows (a full disk answered 200, nothing stored).
    const row = this.write(
      this.db.transaction(
        () =>
          this.db
            .prepare(
              `INSERT INTO saved_queries (user, name, query, view, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (user, name) DO UPDATE SET query = excluded.query, view = excluded.view, updated_at = excluded.updated_at
      RETURNING id, name, query, view, created_at, updated_at`,
            )
            .get(user, name, query, viewText, now, now) as Row,
      ),
    );
    return SavedQueries.row(row);
  }

  remove(user: string, id: number): void {
    const r = this.write(() => this.db.prepare('DELETE FROM saved_queries WHERE user = ? AND id = ?').run(user, id));
    if (r.changes === 0) throw new UiError('not_found', `no saved query ${id} of user ${JSON.stringify(user)}`);
  }

  close(): void {
    this.db.close();
  }
}

/** The user name of a request: the X-Tidepool-User header (set by the explorer, or by an authenticating proxy). */
export function userOf(header: string | string[] | undefined): string {
  const v = Array.isArray(header) ? header[0] : header;
  if (!v || v.trim() === '' || v.length > 200)
    throw badRequest('saved queries need a user name: send the X-Tidepool-User header (1 to 200 characters)', {
      field: 'x-tidepool-user',
    });
  try {
    return decodeURIComponent(v.trim());
  } catch (err) {
    if (err instanceof URIError)
      throw badRequest('X-Tidepool-User is not valid percent-encoding', { field: 'x-tidepool-user' });
    throw err;
  }
}
