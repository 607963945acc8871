// The session-state scan (session-state/state-scan.ts) and its native twin (native/relay-state-scan.h via relayStateScan): the same kinds on the same client streams, whatever reads cut them.
import { describe, expect, it } from 'vitest';
import { StateKind, StateScan } from '../../../../src/pooler/session-state/state-scan.js';
import { writeQuery } from '../../../../src/protocol/writer.js';
import { requireAddon } from '../../../helpers/native.js';
import { mulberry32 } from '../../../helpers/prng.js';

type NativeScan = (reads: Uint8Array[]) => number;

function nativeScan(): NativeScan {
  const f = requireAddon()['relayStateScan'] as NativeScan | undefined;
  expect(typeof f, 'the addon exports relayStateScan (rebuild it: npx node-gyp rebuild)').toBe('function');
  return f!;
}

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = type.charCodeAt(0);
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** Parse: statement name, text, no parameter types. */
function parse(name: string, text: string): Buffer {
  return message('P', Buffer.concat([Buffer.from(`${name}\0${text}\0`), Buffer.from([0, 0])]));
}

const tsScan = (reads: Buffer[]): number => {
  const s = new StateScan();
  for (const r of reads) s.feed(r);
  return s.take();
};

const { Listen, AdvisoryLock, TempTable, HoldCursor, SqlPrepare, Load } = {
  Listen: StateKind.Listen,
  AdvisoryLock: StateKind.AdvisoryLock,
  TempTable: StateKind.TempTable,
  HoldCursor: StateKind.HoldCursor,
  SqlPrepare: StateKind.SqlPrepare,
  Load: StateKind.Load,
};

const VECTORS: [string, Buffer, number][] = [
  ['LISTEN', writeQuery('LISTEN ch'), Listen],
  ['listen, quoted channel', writeQuery('listen "My Channel"'), Listen],
  ['UNLISTEN * clears LISTEN', writeQuery('UNLISTEN *'), Listen << 8],
  ['UNLISTEN of one channel clears nothing', writeQuery('unlisten ch'), 0],
  ['UNLISTEN * after another statement', writeQuery("select 'x';\n  Unlisten\t *"), Listen << 8],
  ['unlisten * inside a literal opens no statement', writeQuery("select 'unlisten *'"), 0],
  ['DISCARD ALL', writeQuery('DISCARD ALL'), (Listen | AdvisoryLock | TempTable | HoldCursor | SqlPrepare) << 8],
  ['DISCARD TEMP names no temp table', writeQuery('discard temp'), TempTable << 8],
  ['CLOSE ALL', writeQuery('CLOSE ALL'), HoldCursor << 8],
  ['CLOSE of one cursor', writeQuery('close c'), 0],
  ['DEALLOCATE ALL', writeQuery('deallocate all'), SqlPrepare << 8],
  ['LISTEN then UNLISTEN * in one text', writeQuery('listen a; unlisten *'), Listen | (Listen << 8)],
  ['a column named listener', writeQuery('select listener from t'), 0],
  ['session lock', writeQuery('select pg_advisory_lock(1)'), AdvisoryLock],
  ['shared try lock, upper case', writeQuery('SELECT PG_TRY_ADVISORY_LOCK_SHARED(1, 2)'), AdvisoryLock],
  ['transaction-level locks', writeQuery('select pg_advisory_xact_lock(1), pg_try_advisory_xact_lock(2)'), 0],
  ['unlock', writeQuery('select pg_advisory_unlock(1), pg_advisory_unlock_all()'), AdvisoryLock << 8],
  ['temp table', writeQuery('create temp table t (x int)'), TempTable],
  ['temporary table', writeQuery('CREATE LOCAL TEMPORARY TABLE t AS SELECT 1'), TempTable],
  ['pg_temp schema', writeQuery('create table pg_temp.t (x int)'), TempTable],
  ['template1 is another word', writeQuery('select datname from pg_database where datname = $$template1$$'), 0],
  ['WITH HOLD cursor', writeQuery('DECLARE c CURSOR WITH HOLD FOR SELECT 1'), HoldCursor],
  ['PREPARE', writeQuery('prepare p (int) as select $1'), SqlPrepare],
  ['LOAD', writeQuery(`load 'auto_explain'`), Load],
  ['Parse text', parse('s1', 'select pg_advisory_lock($1)'), AdvisoryLock],
  ['Parse name only', parse('listen', 'select 1'), Listen],
  ['plain select', writeQuery('select 1'), 0],
  ['words in a Bind are not looked at', message('B', Buffer.from('\0listen\0\0\0\0\0\0\0')), 0],
  ['nor in CopyData', message('d', Buffer.from('listen temp hold load\n')), 0],
  [
    'several kinds',
    writeQuery('listen a; select pg_advisory_lock(1); create temp table t(); declare c cursor with hold for select 1'),
    Listen | AdvisoryLock | TempTable | HoldCursor,
  ],
  ['word at the very end of the text', message('Q', Buffer.from('listen')), Listen],
  ['a multibyte letter joins the word', writeQuery('select 1 as listené'), 0],
  ['$ joins the word', writeQuery('select 1 as hold$'), 0],
];

describe('session-state scan', () => {
  it('finds each kind in whole messages (TypeScript and native)', () => {
    const native = nativeScan();
    for (const [what, msg, want] of VECTORS) {
      expect(tsScan([msg]), what).toBe(want);
      expect(native([msg]), what).toBe(want);
    }
  });

  it('gives the same kinds at every cut of a stream and byte by byte', () => {
    const native = nativeScan();
    const stream = Buffer.concat([writeQuery('select 1'), ...VECTORS.map(([, m]) => m), writeQuery('select 2')]);
    const want = VECTORS.reduce((a, [, , k]) => a | k, 0);
    for (let cut = 0; cut <= stream.length; cut++) {
      const reads = [stream.subarray(0, cut), stream.subarray(cut)];
      expect(tsScan(reads), `cut ${cut}`).toBe(want);
      expect(native(reads), `cut ${cut}`).toBe(want);
    }
    const bytes = [...stream].map((b) => Buffer.from([b]));
    expect(tsScan(bytes)).toBe(want);
    expect(native(bytes)).toBe(want);
  });

  it('agrees with its native twin on random streams and random cuts', () => {
    const native = nativeScan();
    const rnd = mulberry32(1717);
    const words = [
      'listen',
      'LISTEN',
      'unlisten',
      'unlisten *',
      'discard all',
      'DISCARD TEMP',
      'close all',
      'deallocate all',
      'pg_advisory_unlock_all',
      '*',
      'all',
      'pg_advisory_lock',
      'pg_advisory_xact_lock',
      'pg_try_advisory_lock_shared',
      'temp',
      'temporary',
      'template',
      'pg_temp',
      'hold',
      'holding',
      'prepare',
      'load',
      'select',
      '1',
      '(',
      ')',
      ';',
      ' ',
      '\n',
      '"',
      "'",
      '$$',
      'é',
      '_',
    ];
    for (let round = 0; round < 300; round++) {
      const msgs: Buffer[] = [];
      const n = 1 + Math.floor(rnd() * 6);
      for (let i = 0; i < n; i++) {
        let text = '';
        const len = Math.floor(rnd() * 12);
        for (let k = 0; k < len; k++) text += words[Math.floor(rnd() * words.length)] + (rnd() < 0.6 ? ' ' : '');
        const kind = rnd();
        msgs.push(
          kind < 0.5
            ? writeQuery(text)
            : kind < 0.8
              ? parse(rnd() < 0.5 ? '' : 'hold', text)
              : message('B', Buffer.from(text)),
        );
      }
      const stream = Buffer.concat(msgs);
      const reads: Buffer[] = [];
      for (let at = 0; at < stream.length;) {
        const step = 1 + Math.floor(rnd() * 9);
        reads.push(stream.subarray(at, at + step));
        at += step;
      }
      expect(native(reads), `round ${round}`).toBe(tsScan(reads));
      expect(tsScan(reads), `round ${round}`).toBe(tsScan([stream]));
    }
  });
});
