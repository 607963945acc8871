// The layers of src/: what protocol/ and native/ may import, what the log store's lower parts may not, how many import
// circles src/pooler/ and src/logstore/ hold and how many pooler imports climb back up a floor. Type-only imports
// count: an interface that names its own consumer ties the two files together as surely as a value does.
import { createRequire } from 'node:module';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface MadgeResult {
  obj(): Record<string, string[]>;
  circular(): string[][];
}
type Madge = (dir: string, config: object) => Promise<MadgeResult>;
// madge walks the import graph (TypeScript paths, `import type`, `await import()`) better than code we would write.
const madge = createRequire(import.meta.url)('madge') as Madge;

const graphOf = (dir: string): Promise<MadgeResult> =>
  madge(path.join(ROOT, dir), {
    baseDir: ROOT,
    fileExtensions: ['ts'],
    tsConfig: path.join(ROOT, 'tsconfig.json'),
    detectiveOptions: { ts: { skipTypeImports: false, skipAsyncImports: false } },
  });

/** Circles as madge finds them from each folder (the circles of what it imports elsewhere included). Lower these as
 * circles are broken; never raise them. */
const CIRCLE_BASELINE: Record<string, number> = {
  'src/pooler': 0,
  'src/logstore': 0,
};

/** The pooler's floors, lowest first (paths under src/pooler/; a folder ends with '/', the longest match wins). An
 * import from a file to one on a higher floor climbs back up. Files on no floor are not counted. */
const POOLER_FLOORS: readonly (readonly string[])[] = [
  // parts a pool or a session is built from
  [
    'id-table.ts',
    'log-histogram.ts',
    'log-limiter.ts',
    'read-buffer.ts',
    'random-pool.ts',
    'transaction-tracker.ts',
    'cancel-forward.ts',
    'cancel-keys.ts',
    'events.ts',
    'stats.ts',
    'apps.ts',
    'fd-limit.ts',
    'config-diff.ts',
    'show-table.ts',
    'prepared/',
    'query-stats/',
    'log-ship/',
    'session-state/',
    'auth/md5.ts',
    'auth/scram.ts',
    'auth/hba.ts',
    'auth/client-auth.ts',
  ],
  // the relay seam: the one interface and the native relay's socket and addon
  ['relay/relay.ts', 'relay/native-tls.ts', 'relay/native-addon.ts'],
  // the seam's two implementations, the factory that picks one, the TLS contexts they serve
  ['relay/', 'tls/tls-settings.ts'],
  // server connections
  [
    'server-login.ts',
    'server-connection.ts',
    'server-lists.ts',
    'waiter-queue.ts',
    'session-state/param-session.ts',
    'session-state/param-sync.ts',
    'session-state/startup-params.ts',
  ],
  // pools
  ['pool.ts', 'pool-lending.ts', 'pool-settings.ts', 'coordinator.ts', 'pool-set.ts', 'auth/auth-query.ts'],
  // client logins and sessions, and the host interfaces they are given
  [
    'client-login.ts',
    'client-startup.ts',
    'client-session.ts',
    'native-logins.ts',
    'tls/client-handshake.ts',
    'auth/auth-query-pools.ts',
    'hosts.ts',
  ],
  // the operator's views and verbs
  ['snapshot.ts', 'overview.ts', 'control.ts', 'pool-verbs.ts', 'admin/'],
  // the rooms: accept, periodic work
  ['listener.ts', 'maintenance.ts'],
  // the composition root and its faces
  ['pooler.ts', 'process.ts', 'main.ts', 'web/'],
];
/** Pooler imports that climb back up a floor today. Lower it as they go; never raise it. */
const UP_FLOOR_BASELINE = 0;

function floorOf(file: string): number {
  if (!file.startsWith('src/pooler/')) return -1;
  const rel = file.slice('src/pooler/'.length);
  let best = -1;
  let bestLen = 0;
  POOLER_FLOORS.forEach((entries, floor) => {
    for (const e of entries) {
      const hit = e.endsWith('/') ? rel.startsWith(e) : rel === e;
      if (hit && e.length > bestLen) {
        best = floor;
        bestLen = e.length;
      }
    }
  });
  return best;
}

/** Imports of `from` into src/ matching `to`, as "a -> b" lines. */
function importsBetween(
  graph: Record<string, string[]>,
  from: (f: string) => boolean,
  to: (f: string) => boolean,
): string[] {
  const out: string[] = [];
  for (const [file, deps] of Object.entries(graph)) {
    if (!from(file)) continue;
    for (const d of deps) if (to(d)) out.push(`${file} -> ${d}`);
  }
  return out.sort();
}

describe('layers of src/', () => {
  let graph: Record<string, string[]>;
  const circles: Record<string, string[][]> = {};
  beforeAll(async () => {
    graph = (await graphOf('src')).obj();
    for (const dir of Object.keys(CIRCLE_BASELINE)) circles[dir] = (await graphOf(dir)).circular();
  }, 180_000);

  it('sees the whole tree, type-only imports included', () => {
    expect(Object.keys(graph)).toContain('src/pooler/pooler.ts');
    // client-login.ts names Pool only in `import type`.
    expect(graph['src/pooler/client-login.ts']).toContain('src/pooler/pool.ts');
  });

  it('keeps src/protocol/ pure: it imports only itself, the native twins and src/shared/', () => {
    const inside = (f: string) => f.startsWith('src/protocol/');
    const allowed = (f: string) => inside(f) || f.startsWith('src/native/') || f.startsWith('src/shared/');
    expect(importsBetween(graph, inside, (f) => !allowed(f))).toEqual([]);
  });

  it('keeps src/native/ from importing the log store beyond the imports it has today', () => {
    // The native twins of the log store's indexer and hit writer still read its mapping, sort tokens, times and hit
    // layout. This list may only shrink.
    const today = [
      'src/native/doc-indexer.ts -> src/logstore/mapping.ts',
      'src/native/doc-indexer.ts -> src/logstore/storage/sort-tokens.ts',
      'src/native/doc-scan-time.ts -> src/logstore/doc-time.ts',
      'src/native/doc-scan.ts -> src/logstore/doc-time.ts',
      'src/native/hit-writer.ts -> src/logstore/search/hit-json.ts',
    ];
    expect(
      importsBetween(
        graph,
        (f) => f.startsWith('src/native/'),
        (f) => f.startsWith('src/logstore/'),
      ),
    ).toEqual(today);
  });

  it("keeps src/logstore/es/, api/, ingest/ and cluster/ from importing src/logstore/http/: they throw errors.ts's domain errors, http/ and grpc/ map them", () => {
    const lower = (f: string) => ['es/', 'api/', 'ingest/', 'cluster/'].some((d) => f.startsWith(`src/logstore/${d}`));
    expect(importsBetween(graph, lower, (f) => f.startsWith('src/logstore/http/'))).toEqual([]);
  });

  for (const dir of Object.keys(CIRCLE_BASELINE)) {
    it(`holds at most ${CIRCLE_BASELINE[dir]} import circles from ${dir}/`, () => {
      const found = circles[dir]!;
      const listing = found.map((c, i) => `${i + 1}) ${c.join(' > ')}`).join('\n');
      expect(found.length, `import circles from ${dir}/:\n${listing}`).toBeLessThanOrEqual(CIRCLE_BASELINE[dir]!);
    });
  }

  it(`has at most ${UP_FLOOR_BASELINE} pooler imports that climb back up a floor`, () => {
    const up: string[] = [];
    for (const [file, deps] of Object.entries(graph)) {
      const from = floorOf(file);
      if (from < 0) continue;
      for (const d of deps) if (floorOf(d) > from) up.push(`${file} (floor ${from}) -> ${d} (floor ${floorOf(d)})`);
    }
    expect(up.length, `imports that climb:\n${up.join('\n')}`).toBeLessThanOrEqual(UP_FLOOR_BASELINE);
  });
});
