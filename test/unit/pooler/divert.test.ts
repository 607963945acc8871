// Which client messages engage the statement rewriter on the JavaScript relay (src/pooler/prepared/divert.ts): any case, after whitespace and SQL comments, and "maybe" (yes) when a read cuts the first word.
import { describe, expect, it } from 'vitest';
import { wantsRewrite } from '../../../src/pooler/prepared/divert.js';
import { msg } from '../../helpers/raw-pg.js';

const query = (text: string) => msg.query(text);
const whole = (m: Buffer) => wantsRewrite(m[0]!, m, 0, m.readUInt32BE(1), m.length);
/** The message cut after `keep` bytes, as a read would leave it. */
const cut = (m: Buffer, keep: number) => wantsRewrite(m[0]!, m.subarray(0, keep), 0, m.readUInt32BE(1), keep);

describe('wantsRewrite', () => {
  it('takes Parse, Bind, Describe and Close, never Execute, Sync, Flush, CopyData or a plain Query', () => {
    expect(whole(msg.parse('', 'SELECT 1'))).toBe(true);
    expect(whole(msg.bind('S1', ['1']))).toBe(true);
    expect(whole(msg.describePortal())).toBe(true);
    expect(whole(msg.closeStatement('S1'))).toBe(true);
    expect(whole(msg.execute())).toBe(false);
    expect(whole(msg.sync())).toBe(false);
    expect(whole(msg.flush())).toBe(false);
    expect(whole(Buffer.from([0x64, 0, 0, 0, 7, 1, 2, 3]))).toBe(false);
    for (const text of [
      'SELECT 1',
      'select aid from pgbench_accounts',
      'BEGIN',
      'executed',
      'prepared',
      'deallocatex',
      'discarding',
      '',
      '   ',
      '-- only a comment',
      '/* only */',
      '(SELECT 1)',
      'SELECT 1; DISCARD ALL',
    ]) {
      expect(whole(query(text)), text).toBe(false);
    }
  });

  it('takes a Query whose first word is PREPARE, EXECUTE, DEALLOCATE or DISCARD in any case, after whitespace and comments', () => {
    for (const text of [
      'PREPARE q AS SELECT 1',
      'prepare q(int) as select $1',
      'Execute q',
      'execute q(1)',
      'DEALLOCATE q',
      'deallocate all',
      'DISCARD ALL',
      'discard plans',
      '  \t\r\n\f\vPREPARE q AS SELECT 1',
      '-- why\nEXECUTE q',
      '/* a /* nested */ comment */ DEALLOCATE q',
      '/**/discard all',
      'prepare',
      'execute;',
      'prepare_q',
      'PREPARE"q" AS SELECT 1',
    ])
      expect(whole(query(text)), text).toBe(true);
  });

  it('says maybe (yes) when the read cuts the first word, a comment before it, or starts with a byte it cannot read as ASCII', () => {
    const q = query('  /* long comment */ SELECT 1');
    for (let keep = 5; keep < 27; keep++) expect(cut(q, keep), `kept ${keep}`).toBe(true); // up to the first letter
    for (let keep = 27; keep < 34; keep++) expect(cut(q, keep), `kept ${keep}`).toBe(false); // "S...": none of the four
    const p = query('/* x */ PREPARE q AS SELECT 1');
    for (let keep = 13; keep < 21; keep++) expect(cut(p, keep), `kept ${keep}`).toBe(true); // "P" to "PREPARE"
    expect(cut(query('-- x\nSELECT 1'), 8)).toBe(true);
    expect(whole(query('éxecute q'))).toBe(true);
    expect(whole(query('executé'))).toBe(true);
  });
});
