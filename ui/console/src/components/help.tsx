// The (i) beside a metric: a button that shows what the metric means (hover, focus or click; Escape closes).
import { useId, useState } from 'react';
import { HELP } from '../help-texts';

export function Help(props: { id: string; label?: string }) {
  const [open, setOpen] = useState(false);
  const tipId = useId();
  const entry = HELP[props.id];
  if (!entry) return null;
  return (
    <span
      className={open ? 'help open' : 'help'}
      onKeyDown={(e) => {
        if (e.key === 'Escape') setOpen(false);
      }}
    >
      <button
        type="button"
        className="help-btn"
        aria-label={`What is ${props.label ?? entry.name}?`}
        aria-expanded={open}
        aria-describedby={tipId}
        onClick={(e) => {
          e.stopPropagation();
          setOpen((o) => !o);
        }}
        onBlur={() => setOpen(false)}
      >
        i
      </button>
      <span role="tooltip" id={tipId} className="tip">
        {entry.text}
      </span>
    </span>
  );
}
