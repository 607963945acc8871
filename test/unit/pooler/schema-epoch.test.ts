// Which texts and command tags count as schema changes for the Parse cache, and what an epoch does to a statement's identity.
import { describe, expect, it } from 'vitest';
import { isSchemaTagAt, maySchemaChange, maySchemaChangeBytes } from '../../../src/pooler/prepared/schema-epoch.js';
import { Interner } from '../../../src/pooler/prepared/interner.js';

/** The tag as a CommandComplete carries it (type, length, tag, NUL), checked in place. */
function tag(t: string): boolean {
  const b = Buffer.concat([Buffer.from('Cxxxx'), Buffer.from(t), Buffer.from([0])]);
  return isSchemaTagAt(b, 5, b.length - 1);
}

describe('schema changes', () => {
  it('texts that may change the schema, at the start or after a semicolon, past comments', () => {
    const yes = [
      'CREATE TABLE t (a int)',
      '  alter table t add b int',
      'drop table t',
      'DO $$ begin end $$',
      'select 1; drop table t',
      '-- note\nCREATE INDEX i ON t (a)',
      "/* a /* b */ */ alter type x add value 'y'",
      'IMPORT FOREIGN SCHEMA s FROM SERVER f INTO p',
    ];
    const no = [
      'select 1',
      'insert into t values ($1)',
      'delete from t',
      'select * from created',
      'update t set drop = 1',
      'double',
      "select 'x' as dropped",
      'do_it()',
      'creates',
      'commit',
    ];
    for (const t of yes) {
      expect(maySchemaChange(t), t).toBe(true);
      expect(maySchemaChangeBytes(Buffer.from(t)), t).toBe(true);
    }
    for (const t of no) {
      expect(maySchemaChange(t), t).toBe(false);
      expect(maySchemaChangeBytes(Buffer.from(t)), t).toBe(false);
    }
  });

  it('command tags', () => {
    for (const t of ['CREATE TABLE', 'ALTER TABLE', 'DROP TYPE', 'DO', 'CREATE INDEX', 'IMPORT FOREIGN SCHEMA']) {
      expect(tag(t), t).toBe(true);
    }
    for (const t of [
      'SELECT 1',
      'INSERT 0 1',
      'DELETE 3',
      'COPY 2',
      'COMMIT',
      'DISCARD ALL',
      'DECLARE CURSOR',
      'D',
      'DOX',
    ])
      expect(tag(t), t).toBe(false);
  });

  it('a text interned after a schema change is another statement with another server name', () => {
    const interner = new Interner({ idleCapacity: 10 });
    const q = Buffer.from('insert into t values ($1)');
    const types = Buffer.alloc(0);
    const before = interner.intern(q, types, '');
    expect(interner.intern(q, types, '')).toBe(before);
    interner.schemaChanged();
    const after = interner.intern(q, types, '');
    expect(after).not.toBe(before);
    expect(after.name).not.toBe(before.name);
    expect(interner.intern(q, types, '')).toBe(after);
    // The client's search_path is part of the identity too.
    expect(interner.intern(q, types, 'other, public')).not.toBe(after);
  });
});
