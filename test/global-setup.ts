import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrateDatabase } from '@svc/db/migrate';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
// The provided context's types are declared beside inject() in support/db.ts.
import type {} from './support/db.ts';

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export default async function setup(project: TestProject) {
  let adminUrl: string;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let tempDir: string | undefined;
  if (process.env.DATABASE_URL) {
    adminUrl = process.env.DATABASE_URL;
  } else {
    // Mode 700: as root, the launcher places the cluster where the postgres user can reach it.
    tempDir = mkdtempSync(path.join(os.tmpdir(), 'svc-test-pg-'));
    const port = 55000 + Math.floor(Math.random() * 5000);
    const { removeEmbeddedPostgres, startEmbeddedPostgres } = await import('@svc/db/embedded');
    const dataDir = path.join(tempDir, 'data');
    const server = await startEmbeddedPostgres({ dataDir, port, database: 'postgres' });
    adminUrl = server.url;
    stopEmbedded = async () => {
      await server.stop();
      removeEmbeddedPostgres(dataDir);
    };
    console.warn(`tests: DATABASE_URL unset, using an embedded PostgreSQL on port ${port}`);
  }
  const runId = `${Date.now().toString(36)}_${process.pid}`;
  const templateDatabase = `svc_tpl_${runId}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${templateDatabase}"`);
  await migrateDatabase(withDatabase(adminUrl, templateDatabase));
  project.provide('adminUrl', adminUrl);
  project.provide('templateDatabase', templateDatabase);
  if (project.name === 'api') {
    // Built once per run, not once per test file (support/openapi-answers.ts): a file that never
    // starts svc need not load all of it.
    const { buildOpenApiDocument } = await import('../apps/api/src/http/openapi.ts');
    project.provide('openapiDocument', JSON.stringify(buildOpenApiDocument('http://127.0.0.1')));
  }

  return async () => {
    const rows = await admin<{ datname: string }[]>`
      select datname from pg_database where datname like ${`svc_%${runId}%`}`;
    for (const { datname } of rows) {
      await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    }
    await admin.end({ timeout: 5 });
    await stopEmbedded?.();
    if (tempDir) {
      rmSync(tempDir, { recursive: true, force: true });
    }
  };
}
