// Credentials of the console: SSO token (localStorage pooler.sso-token), Basic (pooler.admin-auth: sessionStorage for the
// tab, localStorage when remembered).
export const SSO_TOKEN_KEY = 'pooler.sso-token';
export const ADMIN_AUTH_KEY = 'pooler.admin-auth';

type Listener = () => void;

let basicInMemory: string | null = null;
const listeners = new Set<Listener>();

function notify(): void {
  for (const l of listeners) l();
}

export function onCredentialsChange(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

export function ssoToken(): string | null {
  return localStorage.getItem(SSO_TOKEN_KEY);
}

export function basicCredential(): string | null {
  return basicInMemory ?? sessionStorage.getItem(ADMIN_AUTH_KEY) ?? localStorage.getItem(ADMIN_AUTH_KEY);
}

export function setSsoToken(token: string): void {
  localStorage.setItem(SSO_TOKEN_KEY, token);
  notify();
}

export function dropSsoToken(): void {
  localStorage.removeItem(SSO_TOKEN_KEY);
  notify();
}

/** Keeps `user:password` (base64) for the tab (sessionStorage: a reload keeps it, closing the tab forgets it), or in
 * localStorage when 'Remember me' was chosen (every tab, until Sign out). */
export function setBasic(user: string, password: string, remember: boolean): void {
  const encoded = btoa(unescape(encodeURIComponent(`${user}:${password}`)));
  basicInMemory = encoded;
  (remember ? localStorage : sessionStorage).setItem(ADMIN_AUTH_KEY, encoded);
  (remember ? sessionStorage : localStorage).removeItem(ADMIN_AUTH_KEY);
  notify();
}

export function signOut(): void {
  basicInMemory = null;
  for (const store of [localStorage, sessionStorage]) {
    store.removeItem(ADMIN_AUTH_KEY);
    store.removeItem(SSO_TOKEN_KEY);
  }
  notify();
}

/** The Authorization header: the SSO token when there is one, else Basic, else nothing. */
export function authorizationHeader(): string | null {
  const token = ssoToken();
  if (token) return `Bearer ${token}`;
  const basic = basicCredential();
  return basic ? `Basic ${basic}` : null;
}

export interface TokenClaims {
  exp?: number;
  preferred_username?: string;
  sub?: string;
}

/** Reads (does not verify) the claims of a JWT; the server verifies every request. */
export function tokenClaims(token: string): TokenClaims {
  try {
    const part = token.split('.')[1] ?? '';
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    return JSON.parse(decodeURIComponent(escape(json))) as TokenClaims;
  } catch {
    return {};
  }
}

/** Takes `?token=` out of the address bar into localStorage; returns the token when there was one. */
export function captureTokenFromUrl(): string | null {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token');
  if (!token) return null;
  url.searchParams.delete('token');
  window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
  if (!url.searchParams.has('sso_silent')) setSsoToken(token);
  return token;
}

/** Takes `?sso_error=` (the proxy refused a sign-in) out of the address bar; drops the stale token. */
export function captureSsoErrorFromUrl(): string | null {
  const url = new URL(window.location.href);
  const error = url.searchParams.get('sso_error');
  if (error === null || url.searchParams.has('sso_silent')) return null;
  url.searchParams.delete('sso_error');
  window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
  localStorage.removeItem(SSO_TOKEN_KEY);
  return error || 'error';
}

/** Sends the browser through the SSO proxy, coming back to `returnTo` with `?token=`. */
export function redirectToSso(proxyUrl: string, returnTo: string = window.location.href): void {
  const target = new URL(proxyUrl, window.location.href);
  target.searchParams.set('redirect_to', returnTo);
  window.location.assign(target.toString());
}
