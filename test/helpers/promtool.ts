// Test helper: `promtool check metrics` (Debian's prometheus package) on an exposition text.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const PROMTOOL = '/usr/bin/promtool';

/** What promtool prints about `text` (empty when it passes) and its exit status; throws when promtool is missing. */
export function promtoolCheckMetrics(text: string): { output: string; status: number | null } {
  if (!existsSync(PROMTOOL)) {
    throw new Error(
      `${PROMTOOL} is missing: npm test installs it (Debian package prometheus, see test/setup/tools.ts), or run apt-get install prometheus`,
    );
  }
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (r.error) throw r.error;
  return { output: r.stdout + r.stderr, status: r.status };
}
