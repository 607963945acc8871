// What a personal-data page (Caches, Logs) shows to Anonymous: why it is closed and a way to sign in.
import { useRole } from '../role';

export function NeedsSignIn(props: { what: string }) {
  const { requestSignIn } = useRole();
  return (
    <div className="state locked" data-testid="needs-sign-in" role="note">
      <p>{props.what} can hold SQL text, literal values and tenant names: this page needs an Sso or Admin sign-in.</p>
      <button type="button" onClick={() => requestSignIn(`${props.what} need an Sso or Admin sign-in.`)}>
        Sign in
      </button>
    </div>
  );
}
