// The console shell: auth config, sign-in modal on 401, 'admin role required' banner on 403, offline banner, sidebar, palette, pages.
import { useCallback, useEffect, useMemo, useState } from 'react';
import {
  api,
  lastAnswerAt,
  notAnsweringSince,
  onAuthProblem,
  onConnectionChange,
  OfflineError,
  type AuthConfig,
} from './api';
import { basicCredential, dropSsoToken, onCredentialsChange, signOut, ssoToken, tokenClaims } from './auth';
import { Palette, paletteItems } from './components/palette';
import { SignInModal } from './components/sign-in-modal';
import { Sidebar } from './components/sidebar';
import { OfflineBanner } from './components/states';
import { holdHistory, latest, useHistory } from './history';
import { Page } from './page';
import { RoleContext, type Role } from './role';
import { useLocation } from './router';
import { startSilentRefresh } from './silent-refresh';

function roleLabel(cfg: AuthConfig | null): string | null {
  if (!cfg || cfg.role === 'none') return null;
  if (cfg.role === 'anonymous') return 'anonymous';
  const token = ssoToken();
  if (token) return `sso: ${cfg.username ?? tokenClaims(token).preferred_username ?? tokenClaims(token).sub ?? '?'}`;
  return 'admin';
}

const RETRY_MS = 2000;

export function App(props: { ssoError: string | null }) {
  const location = useLocation();
  const [config, setConfig] = useState<AuthConfig | null>(null);
  const [signIn, setSignIn] = useState<string | null>(
    props.ssoError === null ? null : `SSO sign-in failed: ${props.ssoError}`,
  );
  const [ssoError, setSsoError] = useState(props.ssoError);
  const [forbidden, setForbidden] = useState(false);
  const [generation, setGeneration] = useState(0);
  const [offlineSince, setOfflineSince] = useState<number | null>(notAnsweringSince());
  const [palette, setPalette] = useState(false);

  useEffect(() => onCredentialsChange(() => setGeneration((g) => g + 1)), []);
  useEffect(
    () => onAuthProblem((status) => (status === 401 ? setSignIn('Sign in to continue.') : setForbidden(true))),
    [],
  );
  useEffect(() => onConnectionChange(setOfflineSince), []);

  const loadConfig = useCallback(async () => {
    const cfg = await api<AuthConfig>('/api/auth/config');
    if (cfg.role === 'none' && ssoToken()) {
      // The stored token no longer passes (expired, key rotated, user removed): fall back to Basic or sign-in.
      dropSsoToken();
      return;
    }
    setConfig(cfg);
    if (cfg.role === 'none')
      setSignIn(
        ssoError !== null
          ? `SSO sign-in failed: ${ssoError}`
          : basicCredential()
            ? 'The saved credentials were refused.'
            : 'Sign in to continue.',
      );
    else setSignIn(null);
  }, [ssoError]);

  useEffect(() => {
    let timer: number | null = null;
    const attempt = () => {
      loadConfig().catch((e: unknown) => {
        // The pooler is down at load: the offline banner says so and the console retries until it answers.
        if (e instanceof OfflineError) timer = window.setTimeout(attempt, RETRY_MS);
        else setSignIn(`Cannot reach the pooler: ${(e as Error).message}`);
      });
    };
    attempt();
    return () => {
      if (timer !== null) window.clearTimeout(timer);
    };
  }, [generation, loadConfig]);

  useEffect(() => {
    if (!config?.sso_enabled || !ssoToken()) return undefined;
    return startSilentRefresh(config.sso_proxy_url);
  }, [config?.sso_enabled, config?.sso_proxy_url, generation]);

  const canRead = config !== null && config.role !== 'none';
  useEffect(() => (canRead ? holdHistory() : undefined), [canRead]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setPalette((p) => !p);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const history = useHistory();
  const pools = latest(history)?.pools;
  const items = useMemo(
    () => paletteItems((pools ?? []).map((r) => ({ database: String(r['database']), user: String(r['user']) }))),
    [pools],
  );
  const role: Role = config?.role === 'admin' || config?.role === 'sso' ? config.role : 'anonymous';
  const roleInfo = useMemo(() => ({ role, requestSignIn: (reason: string) => setSignIn(reason) }), [role]);

  const signedIn = Boolean(ssoToken() || basicCredential());
  const wall = location.path === '/wall';
  const offline = offlineSince !== null ? <OfflineBanner since={offlineSince} lastAnswer={lastAnswerAt()} /> : null;
  return (
    <RoleContext.Provider value={roleInfo}>
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <div className={wall ? 'layout wall-layout' : 'layout'}>
        {!wall && (
          <Sidebar
            path={location.path}
            roleLabel={roleLabel(config)}
            signedIn={signedIn}
            anonymous={role === 'anonymous'}
            onPalette={() => setPalette(true)}
            onSignIn={() => setSignIn('Sign in as admin, or through SSO.')}
            onSignOut={() => {
              signOut();
              setForbidden(false);
            }}
          />
        )}
        <main id="content" tabIndex={-1}>
          {offline}
          {forbidden && (
            <div className="banner" role="status" data-testid="forbidden-banner">
              admin role required
              <button className="link" aria-label="dismiss" onClick={() => setForbidden(false)}>
                ×
              </button>
            </div>
          )}
          {canRead && (
            // While the pooler does not answer, the figures are the last ones received: dimmed, the banner says since when.
            <div
              className={offlineSince !== null ? 'page-figures stale' : 'page-figures'}
              data-testid="page-figures"
              data-stale={offlineSince !== null ? '' : undefined}
            >
              <Page key={generation} path={location.path} search={location.search} />
            </div>
          )}
        </main>
        {signIn !== null && (
          <SignInModal
            config={config}
            reason={signIn}
            onSignedIn={(c) => {
              setConfig(c);
              setSignIn(null);
              setSsoError(null);
            }}
            onCancel={canRead ? () => setSignIn(null) : undefined}
          />
        )}
        {palette && <Palette items={items} onClose={() => setPalette(false)} />}
      </div>
    </RoleContext.Provider>
  );
}
