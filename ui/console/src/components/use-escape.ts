// Escape closes the console's dialogs: one keydown listener per open dialog, the newest one answers.
import { useEffect, useRef } from 'react';

/** Dialogs open now, newest last: Escape closes only the top one (a dialog opened over another). */
const open: symbol[] = [];

/** While mounted, Escape calls `onClose` if this dialog is the newest open one; `onClose` null ignores Escape. */
export function useEscape(onClose: (() => void) | null): void {
  const latest = useRef(onClose);
  latest.current = onClose;
  useEffect(() => {
    const me = Symbol('dialog');
    open.push(me);
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || open[open.length - 1] !== me || !latest.current) return;
      e.preventDefault();
      latest.current();
    };
    window.addEventListener('keydown', onKey);
    return () => {
      window.removeEventListener('keydown', onKey);
      open.splice(open.indexOf(me), 1);
    };
  }, []);
}
