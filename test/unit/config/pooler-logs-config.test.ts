// The pooler's [logs] section: defaults, and a clear problem (path, expectation, hint) for every bad value.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadPoolerConfig, parsePoolerConfig } from '../../../src/config/pooler.js';
import { formatProblem } from '../../../src/config/schema.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function problems(logs: string): Record<string, string> {
  const { problems: list } = parsePoolerConfig(`[logs]\n${logs}\n`);
  return Object.fromEntries(list.map((p) => [p.path, formatProblem(p)]));
}

describe('pooler config [logs]', () => {
  it('is off by default, with documented defaults', () => {
    const { config, problems: list } = parsePoolerConfig('');
    expect(list).toEqual([]);
    expect(config.logs).toEqual({
      ship_to: '',
      ship_index: 'tidepool-pooler',
      ship_batch_size: 500,
      ship_flush_interval: 1000,
      ship_queue_size: 10_000,
      ship_timeout: 5000,
      ship_backoff_max: 10_000,
      explorer_url: '',
    });
    expect(Object.isFrozen(config.logs)).toBe(true);
  });

  it('accepts http and https URLs, with a path prefix, and units', () => {
    for (const url of [
      'http://127.0.0.1:9002',
      'https://logs.example.com/',
      'http://[::1]:9002/logstore',
      'http://user:pw@logs:9002',
    ]) {
      expect(problems(`ship_to = "${url}"`)).toEqual({});
    }
    const { config } = parsePoolerConfig(
      '[logs]\nship_to = "http://127.0.0.1:9002"\nship_flush_interval = "250ms"\nship_timeout = "2s"\nship_backoff_max = "1m"\nship_queue_size = 100\nship_batch_size = 100\n',
    );
    expect(config.logs).toMatchObject({
      ship_flush_interval: 250,
      ship_timeout: 2000,
      ship_backoff_max: 60_000,
      ship_queue_size: 100,
      ship_batch_size: 100,
    });
  });

  it('names what is wrong with a ship_to that is not an http(s) URL', () => {
    expect(problems('ship_to = "127.0.0.1:9002"')['logs.ship_to']).toBe(
      'logs.ship_to: expected an http:// or https:// URL of a log store ("http://127.0.0.1:9002"), or "" for off, found "127.0.0.1:9002" (no scheme: write "http://127.0.0.1:9002")',
    );
    expect(problems('ship_to = "ftp://logs:21"')['logs.ship_to']).toMatch(
      /found "ftp:\/\/logs:21" \(the scheme is ftp\)$/,
    );
    expect(problems('ship_to = "localhost:9002"')['logs.ship_to']).toMatch(
      /\(no scheme: write "http:\/\/localhost:9002"\)$/,
    );
    expect(problems('ship_to = "http://"')['logs.ship_to']).toMatch(/\(it does not parse as a URL\)$/);
    expect(problems('ship_to = "http://logs:9002/?x=1"')['logs.ship_to']).toMatch(
      /\(a query or fragment is not allowed\)$/,
    );
    expect(problems('ship_to = 9002')['logs.ship_to']).toBe('logs.ship_to: expected a string, found number 9002');
  });

  it('checks the index name, sizes and durations', () => {
    expect(problems('ship_index = "Tidepool"')['logs.ship_index']).toMatch(
      /expected an index name: lowercase.*found "Tidepool"/,
    );
    expect(problems('ship_index = "_pooler"')['logs.ship_index']).toBeDefined();
    expect(problems('ship_index = "a b"')['logs.ship_index']).toBeDefined();
    expect(problems('ship_index = ""')['logs.ship_index']).toBeDefined();
    expect(problems('ship_batch_size = 0')['logs.ship_batch_size']).toBe(
      'logs.ship_batch_size: expected an integer in [1, 100000], found number 0',
    );
    expect(problems('ship_queue_size = -5')['logs.ship_queue_size']).toMatch(/expected an integer in \[1, 10000000\]/);
    expect(problems('ship_queue_size = 100\nship_batch_size = 500')['logs.ship_queue_size']).toBe(
      'logs.ship_queue_size: expected at least ship_batch_size (500), found 100',
    );
    expect(problems('ship_flush_interval = "soon"')['logs.ship_flush_interval']).toMatch(
      /expected a duration \("250ms", "5s", "10m" or milliseconds\), found the string "soon"/,
    );
    expect(problems('ship_timeout = "0s"')['logs.ship_timeout']).toBe(
      'logs.ship_timeout: expected a duration above zero, found 0',
    );
    expect(problems('ship_backoff_max = 0')['logs.ship_backoff_max']).toBeDefined();
  });

  it('takes an http(s) explorer_url, and names what is wrong with another', () => {
    expect(problems('explorer_url = "http://127.0.0.1:5555"')).toEqual({});
    expect(problems('explorer_url = "https://logs.example.com/explorer/"')).toEqual({});
    expect(problems('explorer_url = "127.0.0.1:5555"')['logs.explorer_url']).toMatch(
      /URL of the log explorer.*\(no scheme: write "http:\/\/127\.0\.0\.1:5555"\)$/,
    );
  });

  it('suggests the key meant by a typo', () => {
    expect(problems('ship_too = "http://127.0.0.1:9002"')['logs.ship_too']).toMatch(/\(did you mean "ship_to"\?\)$/);
    expect(problems('ship_batchsize = 10')['logs.ship_batchsize']).toMatch(/\(did you mean "ship_batch_size"\?\)$/);
  });

  it('lists every problem when a file is loaded (tidepool pooler -t)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-logs-config-'));
    try {
      const file = path.join(dir, 'pooler.toml');
      writeFileSync(file, '[logs]\nship_to = "udp://x"\nship_timeout = "forever"\n');
      let err: unknown;
      try {
        loadPoolerConfig(file);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toMatch(
        /2 problem\(s\)\n {2}logs\.ship_timeout: .*\n {2}logs\.ship_to: .*\(the scheme is udp\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
