import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The dependency rules of docs/architecture.md section 1, read off the sources (tests excluded):
 * apps -> packages; jobs -> db -> contracts; nothing imports an app; the console imports the API
 * router's type only; only apps/api (and the typed client's types) import `@trpc/server`;
 * services never see a transport; no domain module imports `http/` or `trpc/` (their Express
 * routes and hosted pages live in http/, what both sides use in modules/shared/).
 */

const ROOT = path.resolve(import.meta.dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) {
      return name === 'node_modules' || name === 'dist' ? [] : sourceFiles(file);
    }
    return /\.tsx?$/.test(name) && !/\.(test|d)\.ts$/.test(name) ? [file] : [];
  });
}

type Import = { file: string; from: string; typeOnly: boolean };

function importsOf(dir: string): Import[] {
  return sourceFiles(path.join(ROOT, dir)).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)(\s+type)?\s[^;]*?from\s+'([^']+)'/gm)].map((m) => ({
      file: path.relative(ROOT, file),
      from: m[2] as string,
      typeOnly: m[1] !== undefined,
    })),
  );
}

/** Workspace packages an import names (`@svc/db/client` -> `@svc/db`). */
const packageOf = (from: string) => (from.startsWith('@svc/') ? from.split('/').slice(0, 2).join('/') : undefined);

const offending = (imports: Import[], bad: (i: Import) => boolean) => imports.filter(bad).map((i) => `${i.file} -> ${i.from}`);

describe('layers (docs/architecture.md section 1)', () => {
  it('packages point one way: contracts imports no workspace package, db only contracts, jobs only db and contracts', () => {
    const allowed: Record<string, readonly string[]> = {
      'packages/contracts/src': [],
      'packages/db/src': ['@svc/contracts', '@svc/db'],
      'packages/jobs/src': ['@svc/contracts', '@svc/db', '@svc/jobs'],
      // The typed client also names the API router's types (checked below: type-only).
      'packages/client/src': ['@svc/contracts', '@svc/client', '@svc/api'],
      'packages/resource-server/src': [],
    };
    for (const [dir, packages] of Object.entries(allowed)) {
      expect(offending(importsOf(dir), (i) => packageOf(i.from) !== undefined && !packages.includes(packageOf(i.from) as string))).toEqual(
        [],
      );
    }
    // The client may name the API router's types, and nothing else of an app.
    expect(
      offending(importsOf('packages/client/src'), (i) => packageOf(i.from) === '@svc/api' && (!i.typeOnly || i.from !== '@svc/api/router')),
    ).toEqual([]);
  });

  it('the console imports contracts, and the API router only as a type', () => {
    const imports = importsOf('apps/console/src');
    expect(offending(imports, (i) => ['@svc/db', '@svc/jobs', '@svc/client'].includes(packageOf(i.from) ?? ''))).toEqual([]);
    expect(offending(imports, (i) => packageOf(i.from) === '@svc/api' && !i.typeOnly)).toEqual([]);
    expect(offending(imports, (i) => i.from.startsWith('@trpc/server') && !i.typeOnly)).toEqual([]);
  });

  it('services never see a transport: no service imports Express, node:http, http/ or trpc/', () => {
    const services = importsOf('apps/api/src/modules').filter((i) => /\/service\.ts$/.test(i.file));
    expect(offending(services, (i) => i.from === 'express' || i.from === 'node:http' || /\/(http|trpc)\//.test(i.from))).toEqual([]);
  });

  it('no domain module imports Express, not even its types: an Express route is an adapter, in http/', () => {
    // Import declarations as TypeScript reads them, so that code a module writes out as text (the
    // Express app of modules/setup/frameworks/express.ts, in a template literal) is not taken for one.
    const express = sourceFiles(path.join(ROOT, 'apps/api/src/modules')).flatMap((file) =>
      ts
        .createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest)
        .statements.filter(
          (s) =>
            (ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) &&
            s.moduleSpecifier !== undefined &&
            ts.isStringLiteral(s.moduleSpecifier) &&
            /^express(\/|$)/.test(s.moduleSpecifier.text),
        )
        .map(() => path.relative(ROOT, file)),
    );
    expect(express).toEqual([]);
  });

  it('no domain module imports http/ or trpc/: adapters import modules, never the other way', () => {
    const imports = importsOf('apps/api/src/modules');
    // The scan reads the modules' relative imports at all (a broken pattern would pass vacuously).
    expect(imports.filter((i) => i.from.startsWith('../')).length).toBeGreaterThan(100);
    expect(offending(imports, (i) => /^(\.\.\/)+(http|trpc)\//.test(i.from))).toEqual([]);
  });
});
