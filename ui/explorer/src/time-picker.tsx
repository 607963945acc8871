// The time range picker: last 15 minutes / hour / 24 hours / 7 days, a custom "last N units", or two UTC instants.
import { useEffect, useRef, useState } from 'react';
import { RELATIVE, describe, parseUtc, relMs, resolve, utc, type Range } from './time';

export function TimePicker(props: { range: Range; onChange: (r: Range) => void }) {
  const [open, setOpen] = useState(false);
  const [custom, setCustom] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [problem, setProblem] = useState('');
  const box = useRef<HTMLDivElement>(null);

  // The fields are filled from the view's range as the panel opens, in the same event (an effect would run after
  // the panel is painted and could overwrite what is already being typed), and never again while it is open.
  const toggle = () => {
    if (!open) {
      const now = resolve(props.range);
      setFrom(utc(now.from).slice(0, 19));
      setTo(utc(now.to).slice(0, 19));
      const rel = props.range.rel;
      setCustom(rel && !RELATIVE.some(([k]) => k === rel) ? rel : '');
      setProblem('');
    }
    setOpen(!open);
  };

  useEffect(() => {
    if (!open) return undefined;
    const onDown = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') setOpen(false);
    };
    document.addEventListener('mousedown', onDown);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('mousedown', onDown);
      document.removeEventListener('keydown', onKey);
    };
  }, [open]);

  const pick = (r: Range) => {
    setOpen(false);
    props.onChange(r);
  };

  const applyCustom = () => {
    if (relMs(custom) === null) return setProblem('A relative range is a number and a unit: 45m, 6h, 3d.');
    pick({ rel: custom.trim(), from: '', to: '' });
  };

  const applyAbsolute = () => {
    const f = parseUtc(from);
    const t = parseUtc(to);
    if (!f || !t) return setProblem('Times are UTC, as 2026-03-01 12:00:00.');
    if (f >= t) return setProblem('The start must be before the end.');
    pick({ rel: null, from: f, to: t });
  };

  return (
    <div className="time-picker" ref={box}>
      <button
        type="button"
        className="tp-button"
        data-testid="time-button"
        aria-haspopup="dialog"
        aria-expanded={open}
        onClick={toggle}
      >
        <span aria-hidden="true">◷ </span>
        {describe(props.range)}
      </button>
      {open && (
        <div className="tp-panel" role="dialog" aria-label="Time range" data-testid="time-panel">
          <div className="tp-col">
            <h3>Relative</h3>
            {RELATIVE.map(([k, label]) => (
              <button
                type="button"
                key={k}
                className={props.range.rel === k ? 'tp-opt active' : 'tp-opt'}
                onClick={() => pick({ rel: k, from: '', to: '' })}
              >
                {label}
              </button>
            ))}
            <form
              className="tp-row"
              onSubmit={(e) => {
                e.preventDefault();
                applyCustom();
              }}
            >
              <label>
                Last{' '}
                <input
                  data-testid="custom-rel"
                  value={custom}
                  size={5}
                  placeholder="45m"
                  onChange={(e) => setCustom(e.target.value)}
                />
              </label>
              <button type="submit">Apply</button>
            </form>
          </div>
          <form
            className="tp-col"
            onSubmit={(e) => {
              e.preventDefault();
              applyAbsolute();
            }}
          >
            <h3>Absolute (UTC)</h3>
            <label>
              From <input data-testid="abs-from" value={from} onChange={(e) => setFrom(e.target.value)} />
            </label>
            <label>
              To <input data-testid="abs-to" value={to} onChange={(e) => setTo(e.target.value)} />
            </label>
            <button type="submit" data-testid="abs-apply">
              Apply range
            </button>
          </form>
          {problem && (
            <p className="tp-problem" role="alert">
              {problem}
            </p>
          )}
        </div>
      )}
    </div>
  );
}
