// The pooler's [native] switches: defaults, validation, and the TIDEPOOL_* variables that override them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  loadPoolerConfig,
  NATIVE_ENV,
  nativeShape,
  parsePoolerConfig,
} from '../../../src/config/pooler.js';
import { formatProblem } from '../../../src/config/schema.js';

const problems = (toml: string, env = {}) => parsePoolerConfig(toml, env).problems.map(formatProblem);

describe('[native]', () => {
  it('defaults to every native path on, 2048 relay events, prepared pools on the native relay', () => {
    const { config, problems: list } = parsePoolerConfig('');
    expect(list).toEqual([]);
    expect(config.native).toEqual({
      relay: true,
      accept: true,
      login: true,
      lend: true,
      relay_events: 2048,
      prepared_relay: 'native',
    });
  });

  it('reads each key', () => {
    const { config, problems: list } = parsePoolerConfig(
      '[native]\nrelay = false\naccept = false\nlogin = false\nlend = false\nrelay_events = 3\nprepared_relay = "js"\n',
    );
    expect(list).toEqual([]);
    expect(config.native).toEqual({
      relay: false,
      accept: false,
      login: false,
      lend: false,
      relay_events: 3,
      prepared_relay: 'js',
    });
    expect(Object.isFrozen(config.native)).toBe(true);
  });

  it('refuses bad values and unknown keys, naming the key', () => {
    expect(problems('[native]\nrelay = "no"\nrelay_events = 2\nprepared_relay = "c++"\nacept = false\n')).toEqual([
      'native.acept: expected one of the known keys (relay, accept, login, lend, relay_events, prepared_relay), found an unknown key (did you mean "accept"?)',
      'native.relay: expected true or false, found the string "no"',
      'native.relay_events: expected an integer in [3, 65536], found number 2',
      'native.prepared_relay: expected one of "native", "js", found the string "c++"',
    ]);
  });

  it('has one environment variable per key', () => {
    expect(Object.keys(NATIVE_ENV).sort()).toEqual(Object.keys(nativeShape).sort());
  });

  it('lets the environment override the file, and ignores unset or empty variables', () => {
    const toml = '[native]\nrelay = true\nlogin = false\nrelay_events = 100\n';
    const { config, problems: list } = parsePoolerConfig(toml, {
      TIDEPOOL_NATIVE_RELAY: '0',
      TIDEPOOL_NATIVE_LOGIN: '1',
      TIDEPOOL_NATIVE_LEND: 'off',
      TIDEPOOL_RELAY_EVENTS: '3',
      TIDEPOOL_REWRITE_RELAY: 'js',
      TIDEPOOL_NATIVE_ACCEPT: '',
    });
    expect(list).toEqual([]);
    expect(config.native).toEqual({
      relay: false,
      accept: true,
      login: true,
      lend: false,
      relay_events: 3,
      prepared_relay: 'js',
    });
    expect(parsePoolerConfig(toml, { TIDEPOOL_NATIVE_ACCEPT: 'TRUE' }).config.native.accept).toBe(true);
  });

  it('refuses a bad environment value, naming the variable and the key it overrides', () => {
    expect(
      problems('', {
        TIDEPOOL_NATIVE_RELAY: 'yes please',
        TIDEPOOL_RELAY_EVENTS: '1e3',
        TIDEPOOL_REWRITE_RELAY: 'rust',
      }),
    ).toEqual([
      'TIDEPOOL_NATIVE_RELAY (environment, overrides native.relay): expected 0 or 1 (also false/true, off/on), found "yes please"',
      'TIDEPOOL_RELAY_EVENTS (environment, overrides native.relay_events): expected an integer in [3, 65536], found "1e3"',
      'TIDEPOOL_REWRITE_RELAY (environment, overrides native.prepared_relay): expected one of "native", "js", found "rust"',
    ]);
    expect(problems('', { TIDEPOOL_RELAY_EVENTS: '99999' })[0]).toMatch(
      /^TIDEPOOL_RELAY_EVENTS .*\[3, 65536\], found "99999"$/,
    );
  });

  it('loadPoolerConfig reads the process environment by default and throws ConfigError', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tidepool-native-config-'));
    try {
      const file = path.join(dir, 'pooler.toml');
      writeFileSync(file, '[native]\naccept = true\n');
      expect(loadPoolerConfig(file, { TIDEPOOL_NATIVE_ACCEPT: '0' }).native.accept).toBe(false);
      expect(loadPoolerConfig(file, {}).native.accept).toBe(true);
      writeFileSync(file, '[native]\naccept = "sometimes"\n');
      expect(() => loadPoolerConfig(file, {})).toThrow(ConfigError);
      expect(() => loadPoolerConfig(file, {})).toThrow(
        /native\.accept: expected true or false, found the string "sometimes"/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
