// A metric card: label with its (i) help, a big value, an optional detail line; values marked live for screenshots.
import type { ReactNode } from 'react';
import { Help } from './help';

export function Card(props: {
  label: string;
  help?: string;
  value: ReactNode;
  detail?: ReactNode;
  testId?: string;
  live?: boolean;
  tone?: 'warn' | 'bad' | null;
}) {
  return (
    <div className={props.tone ? `card ${props.tone}` : 'card'} data-testid={props.testId}>
      <div className="label">
        {props.label}
        {props.help && <Help id={props.help} label={props.label} />}
      </div>
      <div className="value" data-live={props.live === false ? undefined : ''}>
        {props.value}
      </div>
      {props.detail !== undefined && (
        <div className="detail" data-live={props.live === false ? undefined : ''}>
          {props.detail}
        </div>
      )}
    </div>
  );
}
