// /api/clients query parameters: each filter, sort by every kind of column, order, paging, totals and bad values.
import { describe, expect, it } from 'vitest';
import { ClientsQueryError, CLIENTS_MAX_LIMIT, queryClients } from '../../../../src/pooler/web/clients-query.js';
import type { Row } from '../../../../src/pooler/web/show-rows.js';

const row = (
  client_id: number,
  database: string,
  user: string,
  application_name: string,
  addr: string,
  state: string,
  query_count: number,
): Row => ({
  client_id,
  database,
  user,
  application_name,
  addr,
  tls: '',
  state,
  wait: 0,
  transaction_count: query_count,
  query_count,
  error_count: 0,
  age_seconds: 1,
});

const ROWS: Row[] = [
  row(3, 'app', 'md5user', 'billing', '127.0.0.1:50003', 'idle', 30),
  row(1, 'app', 'scramuser', 'web', '127.0.0.1:50001', 'active', 5),
  row(2, 'app', 'md5user', 'web', '10.0.0.7:41000', 'waiting', 100),
  row(10, 'other', 'md5user', '', '127.0.0.1:50010', 'idle', 5),
];
const ids = (rows: Row[]) => rows.map((r) => r['client_id']);

describe('queryClients', () => {
  it('without parameters returns every row by client_id, total = all', () => {
    const p = queryClients(ROWS, {});
    expect(ids(p.rows)).toEqual([1, 2, 3, 10]);
    expect(p.total).toBe(4);
  });

  it('filters: pool is <database>/<user>; database, user, state, application_name exact; addr a prefix', () => {
    expect(ids(queryClients(ROWS, { pool: 'app/md5user' }).rows)).toEqual([2, 3]);
    expect(ids(queryClients(ROWS, { database: 'other' }).rows)).toEqual([10]);
    expect(ids(queryClients(ROWS, { user: 'scramuser' }).rows)).toEqual([1]);
    expect(ids(queryClients(ROWS, { state: 'waiting' }).rows)).toEqual([2]);
    expect(ids(queryClients(ROWS, { application_name: 'web' }).rows)).toEqual([1, 2]);
    expect(ids(queryClients(ROWS, { application_name: 'we' }).rows)).toEqual([]);
    expect(ids(queryClients(ROWS, { application_name: '' }).rows)).toEqual([10]);
    expect(ids(queryClients(ROWS, { addr: '127.0.0.1' }).rows)).toEqual([1, 3, 10]);
    expect(ids(queryClients(ROWS, { addr: '127.0.0.1:50001' }).rows)).toEqual([1]);
    expect(ids(queryClients(ROWS, { pool: 'app/md5user', application_name: 'web', state: 'waiting' }).rows)).toEqual([
      2,
    ]);
    expect(queryClients(ROWS, { pool: 'nope/none' })).toEqual({ rows: [], total: 0 });
  });

  it('a user name with a slash: the pool id splits at the first slash', () => {
    const odd = [row(1, 'app', 'team/ops', 'x', '127.0.0.1:1', 'idle', 0)];
    expect(ids(queryClients(odd, { pool: 'app/team/ops' }).rows)).toEqual([1]);
  });

  it('sorts numbers by value and strings by code unit, ties by client_id, in either order', () => {
    expect(ids(queryClients(ROWS, { sort: 'query_count' }).rows)).toEqual([1, 10, 3, 2]);
    expect(ids(queryClients(ROWS, { sort: 'query_count', order: 'desc' }).rows)).toEqual([2, 3, 1, 10]);
    expect(ids(queryClients(ROWS, { sort: 'application_name' }).rows)).toEqual([10, 3, 1, 2]);
    expect(ids(queryClients(ROWS, { sort: 'addr', order: 'desc' }).rows)).toEqual([10, 3, 1, 2]);
    expect(ids(queryClients(ROWS, { sort: 'state' }).rows)).toEqual([1, 3, 10, 2]);
  });

  it('bigints (strings of digits) sort by value; nulls go last', () => {
    const big = [
      { client_id: 1, n: '90071992547409930' },
      { client_id: 2, n: '9' },
      { client_id: 3, n: null },
      { client_id: 4, n: 10 },
    ];
    expect(ids(queryClients(big, { sort: 'n' }).rows)).toEqual([2, 4, 1, 3]);
  });

  it('pages with offset and limit; total counts the filtered rows before paging', () => {
    const p = queryClients(ROWS, { sort: 'client_id', offset: '1', limit: '2' });
    expect(ids(p.rows)).toEqual([2, 3]);
    expect(p.total).toBe(4);
    expect(queryClients(ROWS, { offset: '3' }).rows).toHaveLength(1);
    expect(queryClients(ROWS, { offset: '9', limit: '5' })).toEqual({ rows: [], total: 4 });
    expect(queryClients(ROWS, { pool: 'app/md5user', limit: '1' }).total).toBe(2);
    expect(queryClients(ROWS, { limit: '0' }).rows).toEqual([]);
  });

  it('does not change the rows it was given', () => {
    const copy = ROWS.map((r) => ({ ...r }));
    queryClients(ROWS, { sort: 'query_count', order: 'desc', limit: '1' });
    expect(ROWS).toEqual(copy);
  });

  it('ignores parameters it does not know (token travels in queries)', () => {
    expect(queryClients(ROWS, { token: 'x.y.z', foo: ['a', 'b'] }).total).toBe(4);
  });

  it('bad values throw ClientsQueryError with a message naming the parameter', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ pool: 'app' }, /"pool" must be <database>\/<user>/],
      [{ sort: 'nope' }, /"sort" must be a column of SHOW CLIENTS \(client_id, database/],
      [{ sort: 'x;drop' }, /"sort"/],
      [{ order: 'up' }, /"order" must be asc or desc/],
      [{ offset: '-1' }, /"offset" must be an integer/],
      [{ offset: '1.5' }, /"offset"/],
      [{ limit: 'ten' }, /"limit" must be an integer 0\.\.100000/],
      [{ limit: String(CLIENTS_MAX_LIMIT + 1) }, /"limit"/],
      [{ state: ['idle', 'active'] }, /"state" must be given once/],
    ];
    for (const [query, message] of bad) {
      expect(() => queryClients(ROWS, query), JSON.stringify(query)).toThrow(ClientsQueryError);
      expect(() => queryClients(ROWS, query), JSON.stringify(query)).toThrow(message);
    }
  });

  it('with no clients any well-formed sort is accepted and the answer is empty', () => {
    expect(queryClients([], { sort: 'query_count', order: 'desc' })).toEqual({ rows: [], total: 0 });
  });

  it('sort=activity lists active, waiting, idle in transaction, then idle (order desc reverses); activity filters exactly', () => {
    const act = (id: number, activity: string): Row => ({
      ...row(
        id,
        'app',
        'u',
        '',
        '127.0.0.1:1',
        activity === 'waiting' ? 'waiting' : activity === 'idle' ? 'idle' : 'active',
        0,
      ),
      activity,
    });
    const rows = [
      act(1, 'idle'),
      act(2, 'idle in transaction'),
      act(3, 'idle'),
      act(4, 'waiting'),
      act(5, 'active'),
      act(6, 'idle in transaction'),
    ];
    expect(ids(queryClients(rows, { sort: 'activity' }).rows)).toEqual([5, 4, 2, 6, 1, 3]);
    expect(ids(queryClients(rows, { sort: 'activity', limit: '3' }).rows)).toEqual([5, 4, 2]);
    expect(ids(queryClients(rows, { sort: 'activity', order: 'desc' }).rows)).toEqual([1, 3, 2, 6, 4, 5]);
    expect(ids(queryClients(rows, { activity: 'idle in transaction' }).rows)).toEqual([2, 6]);
  });
});
