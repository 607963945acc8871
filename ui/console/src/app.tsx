// The console shell: auth config, sign-in modal on 401, 'admin role required' banner on 403, sidebar and pages.
import { useCallback, useEffect, useState } from 'react';
import { api, onAuthProblem, type AuthConfig } from './api';
import { basicCredential, dropSsoToken, onCredentialsChange, signOut, ssoToken, tokenClaims } from './auth';
import { SignInModal } from './components/sign-in-modal';
import { Sidebar } from './components/sidebar';
import { OverviewPage } from './pages/overview';
import { PoolDetailPage } from './pages/pool-detail';
import { PoolsPage } from './pages/pools';
import { usePath } from './router';
import { startSilentRefresh } from './silent-refresh';

function roleLabel(cfg: AuthConfig | null): string | null {
  if (!cfg || cfg.role === 'none') return null;
  if (cfg.role === 'anonymous') return 'anonymous';
  const token = ssoToken();
  if (token) return `sso: ${cfg.username ?? tokenClaims(token).preferred_username ?? tokenClaims(token).sub ?? '?'}`;
  return 'admin';
}

export function App(props: { ssoError: string | null }) {
  const path = usePath();
  const [config, setConfig] = useState<AuthConfig | null>(null);
  const [signIn, setSignIn] = useState<string | null>(props.ssoError === null ? null : `SSO sign-in failed: ${props.ssoError}`);
  const [ssoError, setSsoError] = useState(props.ssoError);
  const [forbidden, setForbidden] = useState(false);
  const [generation, setGeneration] = useState(0);

  useEffect(() => onCredentialsChange(() => setGeneration((g) => g + 1)), []);
  useEffect(() => onAuthProblem((status) => (status === 401 ? setSignIn('Sign in to continue.') : setForbidden(true))), []);

  const loadConfig = useCallback(async () => {
    const cfg = await api<AuthConfig>('/api/auth/config');
    if (cfg.role === 'none' && ssoToken()) {
      // The stored token no longer passes (expired, key rotated, user removed): fall back to Basic or sign-in.
      dropSsoToken();
      return;
    }
    setConfig(cfg);
    if (cfg.role === 'none') setSignIn(ssoError !== null ? `SSO sign-in failed: ${ssoError}` : basicCredential() ? 'The saved credentials were refused.' : 'Sign in to continue.');
    else setSignIn(null);
  }, [ssoError]);

  useEffect(() => {
    loadConfig().catch((e: unknown) => setSignIn(`Cannot reach the pooler: ${(e as Error).message}`));
  }, [generation, loadConfig]);

  useEffect(() => {
    if (!config?.sso_enabled || !ssoToken()) return undefined;
    return startSilentRefresh(config.sso_proxy_url);
  }, [config?.sso_enabled, config?.sso_proxy_url, generation]);

  const signedIn = Boolean(ssoToken() || basicCredential());
  const canRead = config !== null && config.role !== 'none';
  return (
    <div className="layout">
      <Sidebar path={path} roleLabel={roleLabel(config)} signedIn={signedIn} onSignIn={() => setSignIn('Sign in as admin, or through SSO.')} onSignOut={() => { signOut(); setForbidden(false); }} />
      <main>
        {forbidden && (
          <div className="banner" role="status" data-testid="forbidden-banner">
            admin role required
            <button className="link" aria-label="dismiss" onClick={() => setForbidden(false)}>×</button>
          </div>
        )}
        {canRead && <Page key={generation} path={path} />}
      </main>
      {signIn !== null && (
        <SignInModal
          config={config}
          reason={signIn}
          onSignedIn={(c) => { setConfig(c); setSignIn(null); setSsoError(null); }}
          onCancel={canRead ? () => setSignIn(null) : undefined}
        />
      )}
    </div>
  );
}

function Page(props: { path: string }) {
  const p = props.path;
  if (p === '/' || p === '/overview') return <OverviewPage />;
  if (p === '/pools') return <PoolsPage />;
  const m = /^\/pools\/([^/]+)$/.exec(p);
  if (m) return <PoolDetailPage id={m[1]!} />;
  return (
    <section>
      <h1>Not here yet</h1>
      <p className="muted">The page {p} comes with a later version of the console.</p>
    </section>
  );
}
