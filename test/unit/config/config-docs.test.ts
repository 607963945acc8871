// docs/config-*.md are generated from the config schemas: this fails when a committed file is stale or a key has no doc.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDocs } from '../../../src/config/gen-docs.js';
import { logstoreUiShape } from '../../../src/config/logstore-ui.js';
import { logstoreShape } from '../../../src/config/logstore.js';
import { poolerShape } from '../../../src/config/pooler.js';
import type { Shape } from '../../../src/config/schema.js';
import { packageRoot } from '../../../src/shared/package-root.js';

function undocumented(shape: Shape, prefix = ''): string[] {
  return Object.entries(shape).flatMap(([key, node]) => {
    const p = prefix ? `${prefix}.${key}` : key;
    return node.kind === 'field' ? (node.doc.trim() ? [] : [p]) : undocumented(node.shape, p);
  });
}

describe('config reference', () => {
  it('documents every key', () => {
    expect([...undocumented(poolerShape), ...undocumented(logstoreShape), ...undocumented(logstoreUiShape)]).toEqual(
      [],
    );
  });

  for (const doc of configDocs()) {
    it(`${doc.file} is what the schema generates`, () => {
      let committed = '';
      try {
        committed = readFileSync(path.join(packageRoot, doc.file), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      expect(committed, `${doc.file} is stale: run \`npm run docs:config\` and commit the result`).toBe(doc.text);
    });
  }

  it('shows machine-independent defaults, in the units a file would use', () => {
    const [pooler, logstore] = configDocs();
    expect(pooler!.text).toContain('| `client_login_timeout` | duration | `"1m"` |');
    expect(pooler!.text).toContain('| `max_message_size` | size | `"256MB"` |');
    expect(pooler!.text).toContain('| `relay_events` | integer 3..65536 | `2048` |');
    expect(logstore!.text).toContain('| `storage.shards` | integer 1..256 | the CPU count |');
    expect(logstore!.text).toContain('| `storage.frac_size` | size | `128MB` |');
  });
});
