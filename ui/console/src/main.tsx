// Entry: the hidden SSO refresh frame (/?sso_silent=1) or the console itself.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { api, type AuthConfig } from './api';
import { App } from './app';
import { captureSsoErrorFromUrl, captureTokenFromUrl } from './auth';
import { runSilentFrame } from './silent-refresh';
import './styles.css';

const silent = new URL(window.location.href).searchParams.get('sso_silent') === '1';
const token = captureTokenFromUrl();
const ssoError = captureSsoErrorFromUrl();

if (silent && window.parent !== window) {
  api<AuthConfig>('/api/auth/config', { authorization: null }).then(
    (cfg) => runSilentFrame(cfg.sso_proxy_url, token),
    () => runSilentFrame(undefined, token),
  );
} else {
  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <App ssoError={ssoError} />
    </StrictMode>,
  );
}
