// The tidepool command: parses argv and starts a service (pooler, logstore) or prints help.
import { packageVersion } from './shared/package-root.js';

export const HELP = `tidepool - a PostgreSQL connection pooler and a log store

Usage:
  tidepool pooler --config <file.toml> [-t] [--takeover]
      Start the connection pooler.
      --config, -c <file>   TOML configuration (every key: docs/config-pooler.md)
      -t, --test            Validate the configuration, print every problem, exit 0 or 1
      --takeover            Take the listening sockets of the pooler running with this config (over
                            general.takeover_socket) and serve on them; the old process then stops
                            accepting and shuts down as on SIGTERM. A bad config exits 1, the old one serves on.
  tidepool logstore [--mode single|proxy|store] --config <file.yaml>
      Start the log store (--config=<path> also accepted); --mode defaults to single:
      HTTP :9002 (Elasticsearch-style /_bulk, /search, /aggregate, ...), debug :9200 (/metrics, /health).
      SIGTERM or SIGINT stops it; kill -9 loses no acknowledged document.
  tidepool logstore-ui --config <ui.yaml>
      Start the log store's UI backend: the /api/v1 HTTP API and the log explorer on :5555, the same API
      over gRPC on :5556, /metrics and /health on :5557; it talks gRPC to clients.logstore_addrs.
  tidepool start
      Start the whole product on embedded defaults (what npm start runs): a private PostgreSQL in
      .tidepool/ (TIDEPOOL_HOME), the pooler with its web console, and the log store in single mode;
      prints every address and credential. Ctrl-C stops everything.
  tidepool version          Print the version.
  tidepool help             This text.

Signals (pooler): SIGHUP reloads the config, SIGTERM shuts down gracefully
(transactions may finish for shutdown_timeout), SIGINT exits at once, SIGUSR2 checks the config
with the code on disk (-t) and starts it with --takeover (a failed check is logged, nothing changes).
`;

/** Splits `--flag value`, `--flag=value` and `-t` style arguments. */
export function parseArgs(argv: string[]): { positional: string[]; flags: Map<string, string | true> } {
  const flags = new Map<string, string | true>();
  const positional: string[] = [];
  const valued = new Set(['config', 'c', 'mode']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--') || (a.startsWith('-') && a.length === 2)) {
      const body = a.replace(/^--?/, '');
      const eq = body.indexOf('=');
      if (eq >= 0) flags.set(body.slice(0, eq), body.slice(eq + 1));
      else if (valued.has(body) && i + 1 < argv.length) flags.set(body, argv[++i]!);
      else flags.set(body, true);
    } else positional.push(a);
  }
  return { positional, flags };
}

export async function main(argv: string[]): Promise<number | undefined> {
  const { positional, flags } = parseArgs(argv);
  const cmd = positional[0];
  if (!cmd || cmd === 'help' || flags.has('help') || flags.has('h')) {
    process.stdout.write(HELP);
    return cmd || flags.has('help') || flags.has('h') ? 0 : 1;
  }
  switch (cmd) {
    case 'version':
      process.stdout.write(`tidepool ${packageVersion}\n`);
      return 0;
    case 'start': {
      const { runStart } = await import('./launcher/start.js');
      return runStart();
    }
    case 'pooler': {
      const { runPooler } = await import('./pooler/main.js');
      return runPooler(flags);
    }
    case 'logstore': {
      const { runLogstore } = await import('./logstore/main.js');
      return runLogstore(flags);
    }
    case 'logstore-ui': {
      const { runLogstoreUi } = await import('./logstore/ui-backend/main.js');
      return runLogstoreUi(flags);
    }
    default:
      process.stderr.write(`tidepool: unknown command "${cmd}"\n\n${HELP}`);
      return 1;
  }
}
