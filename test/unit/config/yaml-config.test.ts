// The log store's and the UI backend's YAML configs: broken YAML names its line and column, a non-mapping is one clear problem, an empty file is all defaults.
import { describe, expect, it } from 'vitest';
import { parseLogstoreConfig } from '../../../src/config/logstore.js';
import { parseLogstoreUiConfig } from '../../../src/config/logstore-ui.js';

describe.each([
  ['logstore', parseLogstoreConfig, 'server, storage, mapping, limits'],
  ['logstore-ui', parseLogstoreUiConfig, 'server, clients, handlers'],
] as const)('%s YAML', (_name, parse, sections) => {
  it('a syntax error is one problem at its line and column', () => {
    const { problems } = parse('server:\n  http_addr: [unclosed\n');
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ expected: 'valid YAML' });
    expect(problems[0]!.path).toMatch(/^line \d+, column \d+$/);
  });

  it('a list or a scalar at the top is one problem naming the sections', () => {
    expect(parse('- a\n- b\n').problems).toEqual([
      { path: '(file)', expected: `a YAML mapping of sections (${sections})`, found: 'a list' },
    ]);
    expect(parse('42\n').problems).toEqual([
      { path: '(file)', expected: `a YAML mapping of sections (${sections})`, found: '42' },
    ]);
  });

  it('an empty file is every default, with no problem', () => {
    expect(parse('').problems).toEqual([]);
  });
});
