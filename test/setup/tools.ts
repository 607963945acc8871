// vitest global setup: the programs the tests drive (Chromium, promtool, psql, pgbench) are installed from Debian's packages when missing, or the run fails saying what is missing.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

export interface Tool {
  /** The program the tests run. */
  bin: string;
  /** Where the tests expect it: an absolute path, or a name looked up on PATH. */
  found: () => string | null;
  /** The Debian package that provides it. */
  pkg: string;
  /** Which tests need it. */
  usedBy: string;
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir && executable(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

const at = (file: string) => () => (executable(file) ? file : null);

/** rsyslog's Elasticsearch output module, wherever the multiarch library directory is. */
export function omelasticsearchModule(): string | null {
  for (const dir of ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib']) {
    const file = path.join(dir, 'rsyslog', 'omelasticsearch.so');
    try {
      accessSync(file, constants.R_OK);
      return file;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return null;
}

export const TOOLS: Tool[] = [
  {
    bin: 'chromium',
    found: at('/usr/bin/chromium'),
    pkg: 'chromium',
    usedBy: 'the console tests (test/e2e) drive /usr/bin/chromium with playwright-core',
  },
  {
    bin: 'promtool',
    found: at('/usr/bin/promtool'),
    pkg: 'prometheus',
    usedBy: 'the /metrics tests run promtool check metrics',
  },
  { bin: 'psql', found: () => onPath('psql'), pkg: 'postgresql-client', usedBy: 'the pooler tests drive psql' },
  {
    bin: 'pgbench',
    found: () => onPath('pgbench'),
    pkg: 'postgresql-contrib',
    usedBy: 'the pooler tests drive pgbench',
  },
  {
    bin: 'rsyslogd',
    found: at('/usr/sbin/rsyslogd'),
    pkg: 'rsyslog',
    usedBy: 'the log-store shipper test runs rsyslog with its Elasticsearch output',
  },
  {
    bin: 'omelasticsearch.so',
    found: omelasticsearchModule,
    pkg: 'rsyslog-elasticsearch',
    usedBy: 'the log-store shipper test runs rsyslog with its Elasticsearch output',
  },
];

function say(line: string): void {
  process.stdout.write(`test setup: ${line}\n`);
}

function run(cmd: string, args: string[]): boolean {
  say(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return r.status === 0;
}

/** How to run apt-get here: directly as root, through passwordless sudo, or not at all. */
function aptRunner(): ((args: string[]) => boolean) | string {
  if (!onPath('apt-get')) return 'this machine has no apt-get';
  if (process.getuid?.() === 0) return (args) => run('apt-get', args);
  if (onPath('sudo') && spawnSync('sudo', ['-n', 'true']).status === 0)
    return (args) => run('sudo', ['-n', 'apt-get', ...args]);
  return 'installing packages needs root (or passwordless sudo) and this test run has neither';
}

export default function setup(): void {
  ensureTools(TOOLS, aptRunner);
}

/** Installs the missing tools' packages with `apt` (a runner, or the reason there is none); throws naming what is still missing. */
export function ensureTools(tools: Tool[], apt: () => ((args: string[]) => boolean) | string): void {
  const missing = tools.filter((t) => t.found() === null);
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((t) => t.pkg))];
  const why = missing.map((t) => `  ${t.bin} (Debian package ${t.pkg}): ${t.usedBy}`).join('\n');
  say(`missing, installing from Debian's packages (a minute or two, once per machine):\n${why}`);
  const runner = apt();
  const installed =
    typeof runner !== 'string' &&
    runner(['update', '-q']) &&
    runner(['install', '-y', '-q', '--no-install-recommends', ...pkgs]);
  const still = tools.filter((t) => t.found() === null);
  if (still.length > 0) {
    const reason =
      typeof runner === 'string'
        ? runner
        : installed
          ? 'apt-get finished but the programs are still missing'
          : 'apt-get failed (its output is above)';
    throw new Error(
      `npm test cannot run: ${still.map((t) => t.bin).join(', ')} missing and not installed: ${reason}.\n` +
        `${still.map((t) => `  ${t.bin}: ${t.usedBy}`).join('\n')}\n` +
        `Install them with: apt-get install ${[...new Set(still.map((t) => t.pkg))].join(' ')} (or run npm test as root, which installs them itself).`,
    );
  }
  say(`installed ${pkgs.join(', ')}`);
}
