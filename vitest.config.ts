import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Test files run side by side: most of a file's time is spent waiting on PostgreSQL, a child
 * process or a browser, so on a 2-core machine three at a time finish far sooner than one (each
 * file has its own database and ports: test/support/db.ts, freePort). SVC_TEST_WORKERS overrides.
 * Files that need something of the machine to themselves run alone, after the rest: the
 * agent-context apps start on their framework's default port (3000, 5000, 8000), and the replicas
 * test kills and drains processes under a load balancer.
 */
const WORKERS = Number(process.env.SVC_TEST_WORKERS) || Math.max(2, os.availableParallelism() + 1);
const ALONE = ['e2e/agent-prompt-*.test.ts', 'e2e/replicas.test.ts'];

export default defineConfig({
  test: {
    maxWorkers: WORKERS,
    projects: [
      {
        extends: true,
        test: {
          name: 'api',
          // One PostgreSQL per project run (DATABASE_URL's server, else embedded) and a migrated
          // template database that every test file clones (test/support/db.ts).
          globalSetup: ['test/global-setup.ts'],
          // Every /v1 answer a test receives is checked against the OpenAPI document (status and body).
          setupFiles: ['test/support/openapi-answers.ts'],
          include: ['apps/**/*.test.ts', 'packages/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ['**/node_modules/**', 'apps/console/**'],
          testTimeout: 30_000,
          hookTimeout: 90_000,
        },
      },
      {
        extends: true,
        test: {
          // The console's pure logic (no DOM, no database): its pages are tested in e2e.
          name: 'console',
          include: ['apps/console/src/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          globalSetup: ['test/global-setup.ts'],
          include: ['e2e/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...ALONE],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e-alone',
          globalSetup: ['test/global-setup.ts'],
          include: ALONE,
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
