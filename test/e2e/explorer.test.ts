// The log explorer in Chromium against a real single-mode log store and UI backend holding 10 000 known documents (one environment for the file).
import { afterAll, beforeAll } from 'vitest';
import { startExplorerEnv, type ExplorerShared } from './explorer-harness.js';
import { describeSearch } from './explorer-search.js';
import { describeSidebar } from './explorer-sidebar.js';
import { describeTools } from './explorer-tools.js';

const shared = {} as ExplorerShared;

beforeAll(async () => {
  shared.env = await startExplorerEnv();
}, 120_000);

afterAll(async () => {
  await shared.env?.close();
});

// In this order: the search views over the fixed day, the sidebar and context, then the tools (the live tail
// ingests documents of today, which the earlier "last 15 minutes" check must not see).
describeSearch(shared);
describeSidebar(shared);
describeTools(shared);
