// Loading, error and empty states every page uses, and the banner shown while the pooler is not answering.
import type { ReactNode } from 'react';

export function Loading(props: { what: string }) {
  return (
    <div className="state loading" role="status" aria-live="polite">
      Loading {props.what}…
    </div>
  );
}

export function ErrorState(props: { error: string }) {
  return (
    <div className="state error-state" role="alert">
      Could not load: {props.error}
    </div>
  );
}

export function Empty(props: { children: ReactNode; testId?: string }) {
  return (
    <div className="state empty" data-testid={props.testId}>
      {props.children}
    </div>
  );
}

/**
 * What a page shows before its data: loading, or the error when there is no data to keep showing (with data,
 * a failed poll keeps the last rows and the shell's banner says the pooler is gone).
 */
export function Gate(props: {
  loading: boolean;
  error: string | null;
  hasData: boolean;
  what: string;
  children: () => ReactNode;
}) {
  if (props.hasData) return <>{props.children()}</>;
  if (props.error) return <ErrorState error={props.error} />;
  return <Loading what={props.what} />;
}

/** The pooler missed two polls (no answer within the timeout, or refused): since when, and how old the figures are. */
export function OfflineBanner(props: { since: number; lastAnswer: number | null }) {
  const clock = (t: number) => new Date(t).toLocaleTimeString('en-GB');
  return (
    <div className="banner offline" role="alert" data-testid="offline-banner">
      The pooler is not answering since {clock(props.since)}. The console keeps trying every 2 seconds and recovers by
      itself when it is back.{' '}
      {props.lastAnswer !== null
        ? `The figures below are stale: the last ones received, at ${clock(props.lastAnswer)}.`
        : 'Nothing was received yet.'}
    </div>
  );
}
