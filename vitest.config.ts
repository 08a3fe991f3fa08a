import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
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
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
