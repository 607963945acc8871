// The test run's own setup: a program the tests need that cannot be installed fails the run with a message naming it and the package.
import { describe, expect, it } from 'vitest';
import { ensureTools, TOOLS, type Tool } from '../setup/tools.js';

const absent = (bin: string, pkg: string): Tool => ({ bin, pkg, found: () => null, usedBy: `the ${bin} tests` });

describe('test setup', () => {
  it('finds every tool the suite drives on this machine (the setup installed what was missing)', () => {
    expect(TOOLS.filter((t) => t.found() === null).map((t) => t.bin)).toEqual([]);
  });

  it('fails with the missing program, its package and the reason when it cannot install', () => {
    expect(() => ensureTools([absent('promtool', 'prometheus')], () => 'installing packages needs root')).toThrow(
      /promtool missing and not installed: installing packages needs root\.[\s\S]*the promtool tests[\s\S]*apt-get install prometheus/,
    );
  });

  it('fails when apt-get fails, and installs each package once', () => {
    const calls: string[][] = [];
    const tools = [absent('psql', 'postgresql-client'), absent('pg_dump', 'postgresql-client')];
    expect(() => ensureTools(tools, () => (args) => (calls.push(args), args[0] === 'update'))).toThrow(
      /apt-get failed/,
    );
    expect(calls[1]).toEqual(['install', '-y', '-q', '--no-install-recommends', 'postgresql-client']);
  });

  it('does nothing when every tool is there', () => {
    const present: Tool = { bin: 'sh', pkg: 'dash', found: () => '/bin/sh', usedBy: 'nothing' };
    expect(() => ensureTools([present], () => 'must not be asked')).not.toThrow();
  });
});
