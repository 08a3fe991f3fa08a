import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../../../../test/support/server.ts';
import type { Meta } from '../trpc/init.ts';
import { assertOneOwnerPerRoute, expressRoutesOf, procedureRoutesOf } from './route-table.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('the route table', () => {
  it('holds the hosted pages, the Express routes and the /v1 procedures of the running server', () => {
    const table = new Set(server.routes.map((r) => `${r.method} ${r.path}`));
    for (const route of [
      'GET /healthz',
      'GET /readyz',
      'GET /signin',
      'GET /v1/openapi.json',
      'GET /v1/tenants/{id}',
      'POST /v1/domains',
    ]) {
      expect(table.has(route), route).toBe(true);
    }
    expect(() => assertOneOwnerPerRoute(server.routes)).not.toThrow();
  });

  it('refuses a path served twice, across routers and against a procedure, whatever the parameter spelling', () => {
    const app = express();
    const a = express.Router();
    a.get('/things/:id', () => undefined);
    const b = express.Router();
    b.get('/THINGS/:thingId', () => undefined);
    app.use(a);
    app.use(b);
    expect(() => assertOneOwnerPerRoute(expressRoutesOf(app))).toThrow(/GET \/THINGS\/:thingId: router #0 and router #1/);

    const mounted = express();
    const c = express.Router();
    c.get('/tenants/:id', () => undefined);
    mounted.use('/v1', c);
    const meta: Meta = { openapi: { method: 'GET', path: '/tenants/{id}' } };
    const procedures = { 'tenants.get': { _def: { meta } } };
    expect(() => assertOneOwnerPerRoute([...procedureRoutesOf(procedures), ...expressRoutesOf(mounted)])).toThrow(
      /procedure tenants.get and router #0/,
    );
  });
});
