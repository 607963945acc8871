// `tidepool pooler`: loads the config, validates it (-t) or runs the pooler until a signal stops it; with --takeover it
// takes the listening sockets of the pooler process running with this config (takeover.ts).
import { ConfigError, loadPoolerConfig } from '../config/pooler.js';

export async function runPooler(flags: Map<string, string | true>): Promise<number> {
  const file = flags.get('config') ?? flags.get('c');
  if (typeof file !== 'string') {
    process.stderr.write('tidepool pooler: --config <file.toml> is required\n');
    return 1;
  }
  try {
    loadPoolerConfig(file);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
  if (flags.has('t') || flags.has('test')) {
    process.stdout.write(`${file}: configuration OK\n`);
    return 0;
  }
  const { startPoolerProcess } = await import('./process.js');
  return startPoolerProcess(file, { takeover: flags.has('takeover') });
}
