// The sign-in modal: Basic user/password with 'Remember me', and 'Sign in via SSO' when the proxy URL is known.
import { useState, type FormEvent } from 'react';
import { api, type AuthConfig } from '../api';
import { redirectToSso, setBasic } from '../auth';
import { useEscape } from './use-escape';

export function SignInModal(props: {
  config: AuthConfig | null;
  reason: string | null;
  onSignedIn: (c: AuthConfig) => void;
  onCancel?: () => void;
}) {
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [remember, setRemember] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Only a sign-in the user may cancel closes on Escape (the one a page needs stays).
  useEscape(props.onCancel ?? null);

  async function submit(ev: FormEvent) {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    const header = `Basic ${btoa(unescape(encodeURIComponent(`${user}:${password}`)))}`;
    try {
      const cfg = await api<AuthConfig>('/api/auth/config', { authorization: header });
      if (cfg.role !== 'admin') {
        setError('Wrong user name or password.');
        return;
      }
      setBasic(user, password, remember);
      props.onSignedIn(cfg);
    } catch (e) {
      setError(`Sign-in failed: ${(e as Error).message}`);
    } finally {
      setBusy(false);
    }
  }

  const proxy = props.config?.sso_proxy_url;
  return (
    <div className="modal-backdrop">
      <form className="modal" role="dialog" aria-labelledby="signin-title" onSubmit={submit}>
        <h2 id="signin-title">Sign in</h2>
        {props.reason && <p className="muted">{props.reason}</p>}
        <label>
          User
          <input
            name="username"
            autoComplete="username"
            value={user}
            onChange={(e) => setUser(e.target.value)}
            autoFocus
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        <label className="check">
          <input name="remember" type="checkbox" checked={remember} onChange={(e) => setRemember(e.target.checked)} />{' '}
          Remember me
        </label>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="submit" disabled={busy || !user}>
            Sign in
          </button>
          {proxy && (
            <button type="button" className="secondary" onClick={() => redirectToSso(proxy)}>
              Sign in via SSO
            </button>
          )}
          {props.onCancel && (
            <button type="button" className="secondary" onClick={props.onCancel}>
              Cancel
            </button>
          )}
        </div>
        {props.config?.sso_config_error && <p className="muted">SSO is unavailable: {props.config.sso_config_error}</p>}
      </form>
    </div>
  );
}
