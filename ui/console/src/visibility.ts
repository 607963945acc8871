// Page visibility: polling stops while the tab is hidden and resumes (with an immediate poll) when it shows again.
import { useEffect, useState } from 'react';

export function pageVisible(): boolean {
  return document.visibilityState !== 'hidden';
}

/** Calls `fn` every `ms` while the page is visible, at once when it becomes visible again; returns a stop function. */
export function everyWhileVisible(fn: () => void, ms: number): () => void {
  let timer: number | null = null;
  const start = () => {
    if (timer !== null) return;
    fn();
    timer = window.setInterval(fn, ms);
  };
  const stop = () => {
    if (timer !== null) window.clearInterval(timer);
    timer = null;
  };
  const onChange = () => (pageVisible() ? start() : stop());
  document.addEventListener('visibilitychange', onChange);
  if (pageVisible()) start();
  return () => {
    document.removeEventListener('visibilitychange', onChange);
    stop();
  };
}

export function useVisible(): boolean {
  const [visible, setVisible] = useState(pageVisible());
  useEffect(() => {
    const onChange = () => setVisible(pageVisible());
    document.addEventListener('visibilitychange', onChange);
    return () => document.removeEventListener('visibilitychange', onChange);
  }, []);
  return visible;
}
