// Where this tidepool package lives (package.json, dist/, build/, ui/dist/) and its version: found once, from sources or from dist/.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function find(): { dir: string; version: string } {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++, dir = path.dirname(dir)) {
    let text: string;
    try {
      text = readFileSync(path.join(dir, 'package.json'), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    const pkg = JSON.parse(text) as { name?: string; version?: string };
    if (pkg.name === 'tidepool') return { dir, version: pkg.version ?? '0.0.0' };
  }
  throw new Error(`tidepool's package.json not found above ${fileURLToPath(import.meta.url)}`);
}

const found = find();

/** The package's root directory: the folder holding package.json. */
export const packageRoot: string = found.dir;

/** The package's version from package.json. */
export const packageVersion: string = found.version;
