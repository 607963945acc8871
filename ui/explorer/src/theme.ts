// Light and dark themes: the system setting unless the user picked one (kept in localStorage); charts re-read colours on a change.
import { useEffect, useLayoutEffect, useState } from 'react';

export type ThemeChoice = 'system' | 'light' | 'dark';

const KEY = 'tidepool.explorer.theme';
const media = () => window.matchMedia('(prefers-color-scheme: dark)');

function stored(): ThemeChoice {
  const v = localStorage.getItem(KEY);
  return v === 'light' || v === 'dark' ? v : 'system';
}

/** The theme choice, its setter, and the scheme in effect (the choice, or the system's for "system"). */
export function useTheme(): { choice: ThemeChoice; scheme: 'light' | 'dark'; setChoice: (c: ThemeChoice) => void } {
  const [choice, setChoiceState] = useState<ThemeChoice>(stored);
  const [systemDark, setSystemDark] = useState(media().matches);
  useEffect(() => {
    const mq = media();
    const onChange = () => setSystemDark(mq.matches);
    mq.addEventListener('change', onChange);
    return () => mq.removeEventListener('change', onChange);
  }, []);
  const scheme = choice === 'system' ? (systemDark ? 'dark' : 'light') : choice;
  // A layout effect: set before the charts' effects read the colours.
  useLayoutEffect(() => {
    document.documentElement.dataset['theme'] = scheme;
  }, [scheme]);
  const setChoice = (c: ThemeChoice) => {
    if (c === 'system') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, c);
    setChoiceState(c);
  };
  return { choice, scheme, setChoice };
}

export const cssVar = (name: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
