// The native lane's table as the rewriter gives it at each link (src/pooler/prepared/rewriter.ts laneTable): the bytes
// of the table before when its statements are the same, new bytes whenever they differ; laneUsed reading counts at an
// offset (the release report's); and the server cache's recency order with its most-recently-used shortcut.
import { describe, expect, it } from 'vitest';
import { Interner, type Statement } from '../../../src/pooler/prepared/interner.js';
import { encodeLaneTable } from '../../../src/pooler/prepared/lane.js';
import { StatementRewriter } from '../../../src/pooler/prepared/rewriter.js';
import { ServerStatements } from '../../../src/pooler/prepared/server-cache.js';

const text = (q: string) => ({ query: Buffer.from(q), types: Buffer.alloc(0) });

/** A rewriter holding `names` (each with its own text) and a server that has prepared all of them. */
function setup(names: string[]): { interner: Interner; rw: StatementRewriter; server: ServerStatements } {
  const interner = new Interner({ idleCapacity: 64 });
  const rw = new StatementRewriter(interner, 'public');
  rw.restore(names.map((name) => ({ name, ...text(`SELECT '${name}'`) })));
  const server = prepared(interner, rw);
  rw.attach(server);
  return { interner, rw, server };
}

/** A server with every statement of `rw` prepared and confirmed. */
function prepared(interner: Interner, rw: StatementRewriter): ServerStatements {
  const server = new ServerStatements(interner, 100);
  for (const [, s] of rw.statements()) server.adopt(s, false);
  return server;
}

const entries = (rw: StatementRewriter, names: string[]) =>
  names.map((name) => ({ name, statement: [...rw.statements()].find(([n]) => n === name)![1] }));

describe('laneTable', () => {
  it('gives the same bytes again while the statements are the same, on any server that has them', () => {
    const { interner, rw } = setup(['', 'S1', 'S2']);
    const first = rw.laneTable()!;
    expect(first.equals(encodeLaneTable(entries(rw, ['', 'S1', 'S2'])))).toBe(true);
    expect(rw.laneTable()).toBe(first);
    // Another server holding the same statements: the same table.
    rw.detach();
    rw.attach(prepared(interner, rw));
    expect(rw.laneTable()).toBe(first);
  });

  it('gives new bytes when a statement is stale or closing on the server, or the client has another name', () => {
    const { rw, server } = setup(['', 'S1', 'S2']);
    const first = rw.laneTable()!;
    const s1 = entries(rw, ['S1'])[0]!.statement;
    server.markStale(s1);
    const second = rw.laneTable()!;
    expect(second).not.toBe(first);
    expect(second.equals(encodeLaneTable(entries(rw, ['', 'S2'])))).toBe(true);
    // A server without S1 at all gives the same entries: the same bytes as the link before.
    rw.detach();
    const other = new ServerStatements(new Interner({ idleCapacity: 8 }), 100);
    for (const e of entries(rw, ['', 'S2'])) other.adopt(e.statement, false);
    rw.attach(other);
    expect(rw.laneTable()).toBe(second);
    // The client names another statement, which the server has.
    rw.restore([{ name: 'S3', ...text('SELECT 3') }]);
    other.adopt(entries(rw, ['S3'])[0]!.statement, false);
    const third = rw.laneTable()!;
    expect(third.equals(encodeLaneTable(entries(rw, ['', 'S2', 'S3'])))).toBe(true);
    // None the server holds: no table.
    rw.detach();
    rw.attach(new ServerStatements(new Interner({ idleCapacity: 8 }), 100));
    expect(rw.laneTable()).toBeNull();
  });

  it('laneUsed reads the counts at the offset given (the release report carries them after its entry count)', () => {
    const { rw, server } = setup(['', 'S1']);
    rw.laneTable();
    const [unnamed, s1] = entries(rw, ['', 'S1']).map((e) => e.statement) as [Statement, Statement];
    // Garbage first; then Parse hits 3; entry 0 ('') 2 Binds, 2 Executes, 40 µs; entry 1 (S1) 5 Binds, 4 Executes, 90 µs.
    const counts = Float64Array.from([99, 99, 99, 3, 2, 2, 40, 5, 4, 90]);
    rw.laneUsed(counts, 2, 3);
    expect([unnamed.countUsed, unnamed.cacheHits, unnamed.executions, unnamed.execTimeUs]).toEqual([5, 5, 2, 40]);
    expect([s1.countUsed, s1.cacheHits, s1.executions, s1.execTimeUs]).toEqual([5, 5, 4, 90]);
    expect(server.hits).toBe(3);
    // Taken: the same counts again change nothing until the next table.
    rw.laneUsed(counts, 2, 3);
    expect(s1.executions).toBe(4);
  });
});

describe('ServerStatements recency', () => {
  it('evicts the least recently used, a repeated use of the last one included', () => {
    const interner = new Interner({ idleCapacity: 64 });
    const [a, b, c] = ['a', 'b', 'c'].map((q) => interner.intern(Buffer.from(q), Buffer.alloc(0), '')) as [
      Statement,
      Statement,
      Statement,
    ];
    const server = new ServerStatements(interner, 2);
    server.add(a);
    server.confirm(a);
    expect(server.use(a)).toBeDefined();
    expect(server.use(a)).toBeDefined();
    server.add(b);
    server.confirm(b);
    // b came after a's last use: a's next use must move it behind b.
    expect(server.use(a)).toBeDefined();
    server.add(c);
    server.confirm(c);
    expect(server.toClose).toEqual([b]);
    // Removed and prepared again: it goes last, and a use of another moves that one behind it.
    server.remove(a);
    server.add(a);
    server.confirm(a);
    expect(server.use(c)).toBeDefined();
    expect([...server.statements()]).toEqual([a, c]);
  });
});
