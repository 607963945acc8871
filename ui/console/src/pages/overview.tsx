// Overview: client and server totals, rates, errors, paused pools, and the process behind them.
import { usePolling } from '../use-polling';

interface Overview {
  clients: Record<string, number>;
  servers: Record<string, number>;
  tps: number;
  qps: number;
  errors: number;
  pools: number;
  pools_paused: number;
}

interface ProcessInfo {
  pid: number;
  version: string;
  uptime_seconds: number;
  rss_bytes: number;
  heap_used_bytes: number;
  cpu_percent: number;
  event_loop_delay_ms: { mean: number; p99: number; max: number };
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

export function OverviewPage() {
  const { data, error } = usePolling<Overview>('/api/overview');
  const proc = usePolling<ProcessInfo>('/api/process');
  return (
    <section>
      <h1>Overview</h1>
      {error && <p className="error">{error}</p>}
      {data && (
        <div className="cards" data-testid="overview-cards">
          <Card label="Clients" value={data.clients['total'] ?? 0} detail={`${data.clients['active'] ?? 0} active · ${data.clients['idle'] ?? 0} idle · ${data.clients['waiting'] ?? 0} waiting`} />
          <Card label="Servers" value={data.servers['total'] ?? 0} detail={`${data.servers['active'] ?? 0} active · ${data.servers['idle'] ?? 0} idle · ${data.servers['used'] ?? 0} used · ${data.servers['login'] ?? 0} login`} />
          <Card label="Transactions/s" value={data.tps} />
          <Card label="Queries/s" value={data.qps} />
          <Card label="Errors" value={data.errors} />
          <Card label="Pools" value={data.pools} detail={`${data.pools_paused} paused`} />
        </div>
      )}
      {proc.data && (
        <div className="cards" data-testid="process-cards">
          <Card label="Process" value={`pid ${proc.data.pid}`} detail={`tidepool ${proc.data.version} · up ${proc.data.uptime_seconds} s`} />
          <Card label="Memory" value={mb(proc.data.rss_bytes)} detail={`heap ${mb(proc.data.heap_used_bytes)}`} />
          <Card label="CPU" value={`${proc.data.cpu_percent}%`} detail={`event loop p99 ${proc.data.event_loop_delay_ms.p99} ms`} />
        </div>
      )}
    </section>
  );
}

function Card(props: { label: string; value: string | number; detail?: string }) {
  return (
    <div className="card">
      <div className="label">{props.label}</div>
      <div className="value">{props.value}</div>
      {props.detail && <div className="detail">{props.detail}</div>}
    </div>
  );
}
