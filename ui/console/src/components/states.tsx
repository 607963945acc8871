// Loading, error and empty states every page uses, and the banner shown while the pooler is not answering.
import type { ReactNode } from 'react';

export function Loading(props: { what: string }) {
  return <div className="state loading" role="status" aria-live="polite">Loading {props.what}…</div>;
}

export function ErrorState(props: { error: string }) {
  return <div className="state error-state" role="alert">Could not load: {props.error}</div>;
}

export function Empty(props: { children: ReactNode; testId?: string }) {
  return <div className="state empty" data-testid={props.testId}>{props.children}</div>;
}

/**
 * What a page shows before its data: loading, or the error when there is no data to keep showing (with data,
 * a failed poll keeps the last rows and the shell's banner says the pooler is gone).
 */
export function Gate(props: { loading: boolean; error: string | null; hasData: boolean; what: string; children: () => ReactNode }) {
  if (props.hasData) return <>{props.children()}</>;
  if (props.error) return <ErrorState error={props.error} />;
  return <Loading what={props.what} />;
}

export function OfflineBanner(props: { since: number }) {
  return (
    <div className="banner offline" role="alert" data-testid="offline-banner">
      The pooler is not answering (since {new Date(props.since).toLocaleTimeString('en-GB')}). The console keeps trying every 2 seconds and
      recovers by itself when it is back; the figures shown are the last ones received.
    </div>
  );
}
