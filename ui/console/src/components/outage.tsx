// PostgreSQL outages as the pooler reports them (/api/overview databases_unreachable, /api/pools health columns): red, with the last error.
import type { Row } from '../api';
import type { HistoryState } from '../history';
import { latest } from '../history';

export interface DatabaseOutage {
  database: string;
  since: string;
  pools: string[];
  last_error: string | null;
  last_error_code: string | null;
  last_error_at: string | null;
}

export const clock = (iso: unknown) =>
  typeof iso === 'string' && iso ? new Date(iso).toLocaleTimeString('en-GB') : '–';

/** The outages of the last poll; none when the pooler does not report them. */
export function outagesOf(h: HistoryState): DatabaseOutage[] {
  return latest(h)?.overview?.databases_unreachable ?? [];
}

export function poolUnreachable(r: Row | null | undefined): boolean {
  return r?.['backend_unreachable'] === true;
}

/** "<message> (<code>) at <time>", or null when the pool never failed a connect. */
export function lastErrorText(message: unknown, code: unknown, at: unknown): string | null {
  if (typeof message !== 'string' || !message) return null;
  return `${message}${code ? ` (${String(code)})` : ''} at ${clock(at)}`;
}

/** One line per database whose PostgreSQL is unreachable; nothing while every PostgreSQL answers. */
export function OutageBanner(props: { outages: DatabaseOutage[]; testId: string; big?: boolean }) {
  if (props.outages.length === 0) return null;
  return (
    <div className={props.big ? 'outage big' : 'outage'} role="alert" data-testid={props.testId}>
      {props.outages.map((o) => (
        <div key={o.database} className="outage-line">
          <strong>PostgreSQL unreachable since {clock(o.since)}</strong>{' '}
          <span className="outage-db">database {o.database}</span>
          {lastErrorText(o.last_error, o.last_error_code, o.last_error_at) && (
            <div className="outage-error">
              Last error: {lastErrorText(o.last_error, o.last_error_code, o.last_error_at)}
            </div>
          )}
        </div>
      ))}
    </div>
  );
}
