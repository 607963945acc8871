// bench/results-file.ts: a benchmark's report replaces only its own block of a results file.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeResults } from '../../../bench/results-file.js';

describe('writeResults', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'results-file-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('a new file gets the title and the report in the generated block', () => {
    const f = path.join(tmp(), 'sub', 'r.md');
    writeResults(f, '# Bench\n\n| a | b |\n|---|---|\n| 1 | 2 |\n');
    expect(readFileSync(f, 'utf8')).toBe(
      '# Bench\n\n<!-- generated -->\n| a | b |\n|---|---|\n| 1 | 2 |\n<!-- /generated -->\n',
    );
  });

  it('a file written before the markers keeps its text below the new block', () => {
    const f = path.join(tmp(), 'r.md');
    writeFileSync(f, '# Bench\n\nold top table\n\n## 2026-11-24 run\n\nhand-written findings\n');
    writeResults(f, '# Bench\n\nnew table\n');
    expect(readFileSync(f, 'utf8')).toBe(
      '# Bench\n\n<!-- generated -->\nnew table\n<!-- /generated -->\n\nold top table\n\n## 2026-11-24 run\n\nhand-written findings\n',
    );
  });

  it('the next report replaces only the block; the sections around it stay', () => {
    const f = path.join(tmp(), 'r.md');
    writeFileSync(
      f,
      '# Bench\n\nintro by hand\n\n<!-- generated -->\nfirst\n<!-- /generated -->\n\n## Later section\n\ntext\n',
    );
    writeResults(f, '# Bench\n\nsecond\nwith two lines\n');
    expect(readFileSync(f, 'utf8')).toBe(
      '# Bench\n\nintro by hand\n\n<!-- generated -->\nsecond\nwith two lines\n<!-- /generated -->\n\n## Later section\n\ntext\n',
    );
  });

  it('a named section goes at the end, is replaced in place later, and leaves the main block alone', () => {
    const f = path.join(tmp(), 'r.md');
    writeFileSync(f, '# Bench\n\n<!-- generated -->\nmain\n<!-- /generated -->\n\n## By hand\n\ntext\n');
    writeResults(f, '# New rows\n\nfirst\n', 'new-rows');
    expect(readFileSync(f, 'utf8')).toBe(
      '# Bench\n\n<!-- generated -->\nmain\n<!-- /generated -->\n\n## By hand\n\ntext\n\n<!-- generated:new-rows -->\n## New rows\n\nfirst\n<!-- /generated:new-rows -->\n',
    );
    writeResults(f, '# New rows\n\nsecond\n', 'new-rows');
    writeResults(f, '# Bench\n\nmain 2\n');
    expect(readFileSync(f, 'utf8')).toBe(
      '# Bench\n\n<!-- generated -->\nmain 2\n<!-- /generated -->\n\n## By hand\n\ntext\n\n<!-- generated:new-rows -->\n## New rows\n\nsecond\n<!-- /generated:new-rows -->\n',
    );
  });
});
