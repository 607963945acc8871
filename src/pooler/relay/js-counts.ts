// The JavaScript relay's counts of one client (its RelayCounts), added as they happen to its pool's and its application_name's totals.
import { TxStatus } from '../../protocol/codes.js';
import { countSqlState, Total, type PoolStats } from '../stats.js';
import type { TransactionTracker } from '../transaction-tracker.js';
import type { RelayCounts } from './relay.js';

export class ClientCounts {
  private bytesIn = 0;
  private bytesOut = 0;
  private xactTimeUs = 0;
  private countedQueries = 0;
  private transactions = 0;
  private errors = 0;

  /** `app`: totals of the client's application_name, or null. `tx`: the client's stream, which counts its queries. */
  constructor(
    private readonly stats: PoolStats,
    private readonly app: Float64Array | null,
    private readonly tx: TransactionTracker,
  ) {}

  /** Bytes from the client, toward PostgreSQL. */
  received(n: number): void {
    this.stats.block[Total.Recv]! += n;
    this.bytesIn += n;
    if (this.app) this.app[Total.Recv]! += n;
  }

  /** Bytes from PostgreSQL, toward the client. */
  sent(n: number): void {
    this.stats.block[Total.Sent]! += n;
    this.bytesOut += n;
    if (this.app) this.app[Total.Sent]! += n;
  }

  /** A ReadyForQuery ended a query that took `queryUs`. */
  query(queryUs: number): void {
    this.stats.observeQuery(queryUs);
    if (this.app) this.app[Total.QueryTime]! += queryUs;
  }

  /** A transaction ended that took `xactUs`; returns the queries it ran (counted once, here). */
  transaction(xactUs: number): number {
    const stats = this.stats;
    const app = this.app;
    stats.observeTransaction(xactUs);
    const queries = this.tx.queryCount - this.countedQueries;
    stats.block[Total.Queries]! += queries;
    this.xactTimeUs += xactUs;
    if (app) {
      app[Total.Xact]!++;
      app[Total.XactTime]! += xactUs;
      app[Total.Queries]! += queries;
    }
    this.countedQueries = this.tx.queryCount;
    this.transactions++;
    return queries;
  }

  /** An ErrorResponse went to the client. */
  error(sqlstate: string | null): void {
    this.errors++;
    this.stats.block[Total.Errors]!++;
    countSqlState(this.stats.block, sqlstate);
    if (this.app) this.app[Total.Errors]!++;
  }

  relayCounts(): RelayCounts {
    const tx = this.tx;
    const now = performance.now();
    const xactStart = tx.xactStartedAt;
    return {
      transactions: this.transactions,
      queries: tx.queryCount,
      errors: this.errors,
      bytesSent: this.bytesOut,
      bytesReceived: this.bytesIn,
      txStatus: TxStatus.Idle,
      syncs: tx.syncs,
      unsynced: tx.unsynced,
      xactTimeUs: this.xactTimeUs,
      queryAgeUs: tx.syncs > 0 ? (now - tx.syncStartedAt) * 1000 : 0,
      xactAgeUs: xactStart < 0 ? 0 : (now - xactStart) * 1000,
    };
  }
}
