// Picks the page for a path; unknown paths get a page that says so and links home.
import { AppsPage } from './pages/apps';
import { CachesPage } from './pages/caches';
import { ClientsPage } from './pages/clients';
import { ConfigPage } from './pages/config';
import { LogsPage } from './pages/logs';
import { OverviewPage } from './pages/overview';
import { PoolDetailPage, parsePoolId } from './pages/pool-detail';
import { PoolsPage } from './pages/pools';
import { ServersPage } from './pages/servers';
import { WallPage } from './pages/wall';
import { linkProps } from './router';

export function Page(props: { path: string; search: string }) {
  const p = props.path.replace(/\/+$/, '') || '/';
  switch (p) {
    case '/':
    case '/overview':
      return <OverviewPage />;
    case '/pools':
      return <PoolsPage />;
    case '/clients':
      return <ClientsPage search={props.search} />;
    case '/servers':
      return <ServersPage />;
    case '/apps':
      return <AppsPage />;
    case '/caches':
      return <CachesPage />;
    case '/logs':
      return <LogsPage search={props.search} />;
    case '/config':
      return <ConfigPage />;
    case '/wall':
      return <WallPage />;
  }
  const id = parsePoolId(p);
  if (id) return <PoolDetailPage database={id.database} user={id.user} />;
  return (
    <section>
      <h1>No such page</h1>
      <p className="muted">
        There is no page at <code>{p}</code>. <a {...linkProps('/overview')}>Go to the overview</a>, or press Ctrl K to
        find a page or a pool.
      </p>
    </section>
  );
}
