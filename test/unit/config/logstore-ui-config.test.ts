// The UI backend's config: every key of the spec's table has a default; bad values are refused naming their key.
import { describe, expect, it } from 'vitest';
import { logstoreUiShape, parseLogstoreUiConfig } from '../../../src/config/logstore-ui.js';
import { describeShape } from '../../../src/config/schema.js';

const SPEC_KEYS = [
  'server.http_addr',
  'server.grpc_addr',
  'server.debug_addr',
  'clients.logstore_addrs',
  'clients.logstore_timeout',
  'clients.logstore_avg_doc_size',
  'clients.request_retries',
  'clients.proxy_client_mode',
  'clients.grpc_keepalive_params.time',
  'clients.grpc_keepalive_params.timeout',
  'clients.grpc_keepalive_params.permit_without_stream',
  'handlers.logstore_api.cli_max_search_limit',
  'handlers.logstore_api.max_search_limit',
  'handlers.logstore_api.max_search_total_limit',
  'handlers.logstore_api.max_search_offset_limit',
  'handlers.logstore_api.max_export_limit',
  'handlers.logstore_api.max_parallel_export_requests',
  'handlers.logstore_api.max_aggregations_per_request',
];

describe('logstore-ui config', () => {
  it('has every key of the spec with a default, and an empty file is valid', () => {
    const rows = new Map(describeShape(logstoreUiShape).map((r) => [r.key, r]));
    for (const k of SPEC_KEYS) {
      expect(rows.get(k), k).toBeDefined();
      expect(rows.get(k)!.default, k).not.toBeUndefined();
      expect(rows.get(k)!.doc, k).not.toBe('');
    }
    const { config, problems } = parseLogstoreUiConfig('');
    expect(problems).toEqual([]);
    expect(config.server).toEqual({ http_addr: ':5555', grpc_addr: ':5556', debug_addr: ':5557' });
    expect(config.clients.logstore_timeout).toBe(10_000);
    expect(Object.isFrozen(config.handlers.logstore_api)).toBe(true);
  });

  it('reads durations and sizes, and refuses what it cannot use', () => {
    const ok = parseLogstoreUiConfig(
      'clients:\n  logstore_timeout: 2s\n  logstore_avg_doc_size: 4KB\n  grpc_keepalive_params:\n    time: 1m\n',
    );
    expect(ok.problems).toEqual([]);
    expect(ok.config.clients.logstore_timeout).toBe(2000);
    expect(ok.config.clients.logstore_avg_doc_size).toBe(4096);
    expect(ok.config.clients.grpc_keepalive_params.time).toBe(60_000);
    const bad = parseLogstoreUiConfig(
      'clients:\n  proxy_client_mode: http\n  logstore_addrs: []\n  request_retries: -1\nhandlers:\n  logstore_api:\n    max_search_limt: 5\nserver:\n  http_addr: nowhere\n',
    );
    const paths = bad.problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'clients.proxy_client_mode',
        'clients.logstore_addrs',
        'clients.request_retries',
        'handlers.logstore_api.max_search_limt',
        'server.http_addr',
      ]),
    );
    expect(bad.problems.find((p) => p.path === 'handlers.logstore_api.max_search_limt')!.hint).toContain(
      'max_search_limit',
    );
  });

  it('takes links.console_url as an http(s) URL or empty', () => {
    expect(parseLogstoreUiConfig('links:\n  console_url: "http://127.0.0.1:9127"\n').problems).toEqual([]);
    expect(parseLogstoreUiConfig('').config.links.console_url).toBe('');
    expect(parseLogstoreUiConfig('links:\n  console_url: "127.0.0.1:9127"\n').problems.map((p) => p.path)).toEqual([
      'links.console_url',
    ]);
  });
});
