// Every console page in Chromium against one real pooler, PostgreSQL and node-postgres traffic (one of each for the whole file).
import { afterAll, beforeAll } from 'vitest';
import { startConsoleEnv, startTraffic, type ConsoleEnv, type Traffic } from './console-harness.js';
import { describeCrossPage } from './pages-cross.js';
import { describeDataPages } from './pages-data.js';
import { describeOverviewAndShots } from './pages-overview.js';
import { describeRecovery } from './pages-recovery.js';

export interface Shared {
  env: ConsoleEnv;
  traffic: Traffic;
}

const shared = {} as Shared;

beforeAll(async () => {
  shared.env = await startConsoleEnv();
  shared.traffic = await startTraffic(shared.env.tp.port);
});
afterAll(async () => {
  await shared.traffic?.end();
  await shared.env?.close();
});

// In this order: charts and rates while the traffic runs, screenshots once it stopped, then the pages' behaviour,
// and last the pooler stopped and restarted under the open console.
describeOverviewAndShots(shared);
describeDataPages(shared);
describeCrossPage(shared);
describeRecovery(shared);
