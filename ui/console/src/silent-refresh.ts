// SSO silent refresh: every 60 s, when the token is under 90 s from exp, a hidden frame at /?sso_silent=1 fetches a new one.
import { basicCredential, dropSsoToken, redirectToSso, setSsoToken, ssoToken, tokenClaims } from './auth';

export const REFRESH_POLL_MS = 60_000;
export const REFRESH_BEFORE_S = 90;
const FRAME_TIMEOUT_MS = 20_000;
const MESSAGE = 'pooler.sso-silent';

interface SilentMessage {
  type: typeof MESSAGE;
  token?: string;
  error?: string;
}

/** In the hidden frame: hand a token (or the proxy's error) to the parent, or go get one through the proxy. */
export function runSilentFrame(proxyUrl: string | undefined, token: string | null): void {
  const url = new URL(window.location.href);
  const post = (m: SilentMessage) => window.parent.postMessage(m, window.location.origin);
  if (token) return post({ type: MESSAGE, token });
  if (url.searchParams.has('sso_error'))
    return post({ type: MESSAGE, error: url.searchParams.get('sso_error') ?? 'error' });
  if (!proxyUrl) return post({ type: MESSAGE, error: 'sso is not configured' });
  redirectToSso(proxyUrl, `${window.location.origin}/?sso_silent=1`);
}

/** Loads the hidden frame and resolves with the new token, or null on failure or timeout. */
export function refreshInFrame(): Promise<string | null> {
  return new Promise((resolve) => {
    const frame = document.createElement('iframe');
    frame.style.display = 'none';
    frame.setAttribute('aria-hidden', 'true');
    frame.src = '/?sso_silent=1';
    const done = (token: string | null) => {
      window.removeEventListener('message', onMessage);
      window.clearTimeout(timer);
      frame.remove();
      resolve(token);
    };
    const onMessage = (ev: MessageEvent) => {
      if (ev.origin !== window.location.origin || ev.source !== frame.contentWindow) return;
      const m = ev.data as SilentMessage;
      if (m?.type !== MESSAGE) return;
      done(typeof m.token === 'string' && m.token ? m.token : null);
    };
    const timer = window.setTimeout(() => done(null), FRAME_TIMEOUT_MS);
    window.addEventListener('message', onMessage);
    document.body.appendChild(frame);
  });
}

/** One check of the poller; exported so it can run at once after sign-in. */
export async function refreshIfNeeded(proxyUrl: string | undefined, nowS = Date.now() / 1000): Promise<void> {
  const token = ssoToken();
  if (!token) return;
  const exp = tokenClaims(token).exp;
  if (exp === undefined || exp - nowS >= REFRESH_BEFORE_S) return;
  const fresh = await refreshInFrame();
  if (fresh) return setSsoToken(fresh);
  if (basicCredential()) return dropSsoToken();
  if (proxyUrl) redirectToSso(proxyUrl);
}

export function startSilentRefresh(proxyUrl: string | undefined): () => void {
  const timer = window.setInterval(() => void refreshIfNeeded(proxyUrl), REFRESH_POLL_MS);
  void refreshIfNeeded(proxyUrl);
  return () => window.clearInterval(timer);
}
