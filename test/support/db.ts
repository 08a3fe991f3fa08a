import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, inject } from 'vitest';
import { migrateDatabaseTo } from '../../packages/db/src/migrate.ts';

declare module 'vitest' {
  // biome-ignore lint/style/useConsistentTypeDefinitions: module augmentation merges only into an interface.
  export interface ProvidedContext {
    /** URL of a maintenance database on the test server (used to create and drop databases). */
    adminUrl: string;
    /** Name of the migrated template database each test file clones. */
    templateDatabase: string;
    /** The OpenAPI document svc serves, as JSON, for the api project (support/openapi-answers.ts). */
    openapiDocument: string;
  }
}

/**
 * A fresh, fully migrated database for the calling test file, cloned from the run's template
 * (CREATE DATABASE ... TEMPLATE copies files: far faster than migrating). Dropped at teardown.
 */
export async function createTestDatabase(): Promise<string> {
  const template = inject('templateDatabase');
  const { name, url, adminUrl } = runDatabase('t');
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database "${name}" template "${template}"`);
        break;
      } catch (error) {
        // 55006: the template is briefly in use by a concurrent clone; try again.
        if ((error as { code?: string }).code !== '55006' || attempt >= 50) {
          throw error;
        }
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end({ timeout: 1 });
  }
  return url;
}

/**
 * A name and URL for a database of this run that a test creates itself (empty, or broken on
 * purpose). Named like the run's databases, so global teardown drops it even if the test's own
 * cleanup does not run.
 */
export function runDatabase(label: string): { name: string; url: string; adminUrl: string } {
  const adminUrl = inject('adminUrl');
  const runId = inject('templateDatabase').replace(/^svc_tpl_/, '');
  const name = `svc_${label}_${randomBytes(4).toString('hex')}_${runId}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), adminUrl };
}

/**
 * A migration test's database: its own, at `migration` (the committed migrations up to it,
 * applied as a server of that time would have), created before the calling file's tests and
 * dropped after them. `db` connects on its first query; `url` is for migrateDatabase.
 */
export function databaseAtMigration(label: string, migration: string): { url: string; db: postgres.Sql } {
  const { name, url, adminUrl } = runDatabase(label);
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const db = postgres(url, { max: 1, onnotice: () => {} });
  beforeAll(async () => {
    await admin.unsafe(`create database "${name}"`);
    await migrateDatabaseTo(url, migration);
  }, 60_000);
  afterAll(async () => {
    await db.end({ timeout: 1 });
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 1 });
  });
  return { url, db };
}
