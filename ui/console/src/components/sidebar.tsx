// Navigation (every page, the current one marked), the command palette button, the role label and sign-in / sign-out.
import { PAGES } from '../pages-list';
import { linkProps } from '../router';

export function Sidebar(props: {
  path: string;
  roleLabel: string | null;
  onSignIn: () => void;
  onSignOut: () => void;
  signedIn: boolean;
  onPalette: () => void;
  anonymous: boolean;
}) {
  const current = props.path === '/' ? '/overview' : props.path;
  return (
    <nav className="sidebar" aria-label="Console pages">
      <div className="brand">tidepool</div>
      <button
        type="button"
        className="palette-btn secondary"
        onClick={props.onPalette}
        aria-keyshortcuts="Control+K Meta+K"
      >
        Go to… <kbd>Ctrl K</kbd>
      </button>
      <ul>
        {PAGES.map((p) => {
          const active = current === p.path || current.startsWith(`${p.path}/`);
          return (
            <li key={p.path}>
              <a
                {...linkProps(p.path)}
                className={active ? 'active' : undefined}
                aria-current={active ? 'page' : undefined}
              >
                {p.title}
                {p.personal && props.anonymous && (
                  <span className="lock" aria-label="(needs sign-in)" title="Needs an Sso or Admin sign-in">
                    {' '}
                    🔒
                  </span>
                )}
              </a>
            </li>
          );
        })}
      </ul>
      <div className="who">
        <div className="role" data-testid="role-label">
          {props.roleLabel ?? 'signed out'}
        </div>
        {props.signedIn ? (
          <button className="secondary" onClick={props.onSignOut}>
            Sign out
          </button>
        ) : (
          <button className="secondary" onClick={props.onSignIn}>
            Sign in
          </button>
        )}
      </div>
    </nav>
  );
}
