// The patterns view: the query's newest matches grouped by message template (POST /api/v1/patterns), largest first.
import { Fragment, useEffect, useState } from 'react';
import { ApiError, call } from './api';
import { utc } from './time';

export interface Pattern {
  pattern: string;
  count: number;
  example: { id: string; time: string; message: string };
  first_time: string;
  last_time: string;
}
interface PatternsAnswer {
  total: number;
  sampled: number;
  without_message: number;
  patterns: Pattern[];
  patterns_total: number;
  partial_response: boolean;
}

/** The template with its placeholders (<num>, <ip>, ...) marked, so the fixed words read as the message. */
function templateNodes(t: string) {
  return t.split(/(<(?:num|str|ip|uuid|hex|time)>)/).map((part, i) =>
    i % 2 ? (
      <span key={i} className="pt-ph">
        {part}
      </span>
    ) : (
      <Fragment key={i}>{part}</Fragment>
    ),
  );
}

export function PatternsPanel(props: { query: string; from: string; to: string }) {
  const [answer, setAnswer] = useState<PatternsAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { query, from, to } = props;

  useEffect(() => {
    if (!from) return undefined;
    const ctl = new AbortController();
    setError(null);
    call<PatternsAnswer>('POST', '/patterns', { query, from, to }, ctl.signal).then(setAnswer, (err: Error) => {
      if (ctl.signal.aborted) return;
      setAnswer(null);
      setError(err instanceof ApiError ? err.message : String(err));
    });
    return () => ctl.abort();
  }, [query, from, to]);

  if (error)
    return (
      <section className="patterns" aria-label="Patterns">
        <div className="banner bad" role="alert">
          {error}
        </div>
      </section>
    );
  if (!answer)
    return (
      <section className="patterns" aria-label="Patterns" data-testid="patterns-loading">
        <p className="r-foot">Grouping the matches…</p>
      </section>
    );
  const top = answer.patterns[0]?.count ?? 1;
  return (
    <section className="patterns" aria-label="Patterns" data-testid="patterns">
      <p className="pt-note" data-testid="patterns-note">
        {answer.patterns_total.toLocaleString('en-US')} {answer.patterns_total === 1 ? 'pattern' : 'patterns'} in{' '}
        {answer.sampled < answer.total ? `the newest ${answer.sampled.toLocaleString('en-US')} of ` : ''}
        {answer.total.toLocaleString('en-US')} matches
        {answer.without_message > 0 && <> · {answer.without_message.toLocaleString('en-US')} without a message field</>}
        {answer.patterns.length < answer.patterns_total && <> · the {answer.patterns.length} largest shown</>}
      </p>
      <table className="agg-table pt-table">
        <thead>
          <tr>
            <th className="num">Count</th>
            <th className="agg-barcol" aria-hidden="true" />
            <th>Pattern</th>
            <th>Last seen (UTC)</th>
          </tr>
        </thead>
        <tbody>
          {answer.patterns.map((p) => (
            <tr key={p.pattern} data-testid="pattern-row">
              <td className="num" data-testid="pattern-count">
                {p.count.toLocaleString('en-US')}
              </td>
              <td className="agg-barcol" aria-hidden="true">
                <span className="agg-bar" style={{ width: `${(100 * p.count) / top}%` }} />
              </td>
              <td className="pt-pattern">
                <div data-testid="pattern-text">{templateNodes(p.pattern)}</div>
                <div className="pt-example" title="The newest line of this pattern">
                  {p.example.message}
                </div>
              </td>
              <td className="num">{utc(p.last_time).slice(0, 19)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
