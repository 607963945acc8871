// Navigation, the current role label (admin, sso: <user>, anonymous) and sign-in / sign-out.
import { navigate } from '../router';

const PAGES = [
  ['/overview', 'Overview'],
  ['/pools', 'Pools'],
] as const;

export function Sidebar(props: { path: string; roleLabel: string | null; onSignIn: () => void; onSignOut: () => void; signedIn: boolean }) {
  return (
    <nav className="sidebar">
      <div className="brand">tidepool</div>
      <ul>
        {PAGES.map(([href, label]) => (
          <li key={href}>
            <a
              href={href}
              className={props.path === href || props.path.startsWith(`${href}/`) || (href === '/overview' && props.path === '/') ? 'active' : ''}
              onClick={(e) => {
                e.preventDefault();
                navigate(href);
              }}
            >
              {label}
            </a>
          </li>
        ))}
      </ul>
      <div className="who">
        <div className="role" data-testid="role-label">{props.roleLabel ?? 'signed out'}</div>
        {props.signedIn ? (
          <button className="secondary" onClick={props.onSignOut}>Sign out</button>
        ) : (
          <button className="secondary" onClick={props.onSignIn}>Sign in</button>
        )}
      </div>
    </nav>
  );
}
