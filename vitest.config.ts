import { defineConfig } from 'vitest/config';

// The pooler's integration tests run twice: on the native relay (the default when the addon is built) and
// on the JavaScript relay (TIDEPOOL_NATIVE_RELAY=0), which stays the fallback and must stay correct.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Installs Chromium, promtool, psql and pgbench from Debian's packages when missing (or fails saying what is missing).
    globalSetup: ['test/setup/tools.ts'],
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'js-relay',
          include: ['test/integration/pooler/**/*.test.ts', 'test/e2e/idle-in-transaction.test.ts'],
          env: { TIDEPOOL_NATIVE_RELAY: '0' },
        },
      },
    ],
  },
});
