import { SUPPORTED_FRAMEWORKS, ZAgentContextResponse } from '@svc/contracts/agent-context';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedApplication } from '../../../../../test/support/factories.ts';
import { startTestServer } from '../../../../../test/support/server.ts';
import { seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { noneMatch } from '../../http/agent-context.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('GET /v1/setup/agent-context over HTTP', () => {
  it('answers the context for a publishable key, with the application allowlists and no secret', async () => {
    const app = await seedApplication(server.services.db, {
      redirectUrls: ['https://shop.example.com/api/auth/callback/svc'],
      allowedOrigins: ['https://shop.example.com'],
    });
    const res = await fetch(`${server.url}/v1/setup/agent-context?publishable_key=${app.publishableKey}&framework=nextjs`);
    const text = await res.text();
    expect(res.status).toBe(200);
    const body = ZAgentContextResponse.parse(JSON.parse(text));
    expect(body.project.application.publishableKey).toBe(app.publishableKey);
    expect(body.redirectUrls).toContain('https://shop.example.com/api/auth/callback/svc');
    expect(body.javascriptOrigins).toContain('https://shop.example.com');
    expect(body.framework.installCommand).toContain('next-auth');
    expect(body.aiAgentPrompt).toContain(app.publishableKey);
    expect(text).not.toContain(app.secretKey);
    expect(text).not.toContain(app.application.secretKeyHash);
    expect(text).not.toMatch(/sk_live_[0-9A-Za-z]{4,}/);
  });

  it('works keyless and through the header', async () => {
    const keyless = await fetch(`${server.url}/v1/setup/agent-context?keyless=1&framework=django`);
    expect(keyless.status).toBe(200);
    expect(((await keyless.json()) as { project: { keyless: boolean } }).project.keyless).toBe(true);
    const app = await seedApplication(server.services.db);
    const byHeader = await fetch(`${server.url}/v1/setup/agent-context?framework=rest`, {
      headers: { 'x-svc-publishable-key': app.publishableKey },
    });
    expect(byHeader.status).toBe(200);
  });

  it.each([
    ['unknown framework', 'keyless=1&framework=cobol', 400, 'unsupported_framework'],
    ['repeated framework', 'keyless=1&framework=rest&framework=react', 400, 'validation_failed'],
    ['no key', 'framework=rest', 400, 'invalid_publishable_key'],
    ['unknown key', `framework=rest&publishable_key=pk_live_${'Y'.repeat(24)}`, 404, 'application_not_found'],
  ])('%s -> %i %s', async (_name, query, status, code) => {
    const res = await fetch(`${server.url}/v1/setup/agent-context?${query}`);
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
  });
});

type Ctx = { oidc: { issuer: string; clientId: string }; redirectUrls: string[]; project: { application: { publishableKey: string } } };

/** An application created and changed the way an org admin does it, over HTTP. */
async function adminApplication(body: Record<string, unknown> = {}) {
  const org = await seedOrganization(server.services.db);
  const admin = await seedSignedIn(server.services.db, { organization: org, roleKey: 'org_admin' });
  const call = async (method: string, path: string, json?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        cookie: admin.cookie,
        ...(json === undefined ? {} : { 'content-type': 'application/json', origin: server.services.config.publicUrl }),
      },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    return (await res.json()) as { application: { id: string; publishableKey: string } };
  };
  const created = await call('POST', '/v1/applications', { organization_slug: org.slug, name: 'Shop', ...body });
  return { application: created.application, call };
}

function context(publishableKey: string, query = 'framework=nextjs', headers: Record<string, string> = {}) {
  return fetch(`${server.url}/v1/setup/agent-context?publishable_key=${publishableKey}&${query}`, { headers });
}

describe('the agent context as a document', () => {
  it('format=markdown answers text/markdown with the same issuer, client id, key and allowlists as the JSON', async () => {
    const app = await seedApplication(server.services.db, {
      redirectUrls: ['https://shop.example.com/api/auth/callback/svc'],
      allowedOrigins: ['https://shop.example.com'],
    });
    const json = (await (await context(app.publishableKey)).json()) as Ctx;
    const res = await context(app.publishableKey, 'framework=nextjs&format=markdown');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    const md = await res.text();
    expect(md.startsWith('# svc setup context: Next.js app for ')).toBe(true);
    expect(md).toContain(`- Issuer: \`${json.oidc.issuer}\``);
    expect(md).toContain(`- Client id: \`${json.oidc.clientId}\``);
    expect(json.oidc.clientId).toBe(app.application.id);
    expect(md).toContain(`\`${app.publishableKey}\``);
    expect(md).toContain('- `https://shop.example.com/api/auth/callback/svc`');
    expect(md).toMatch(/\n```sh\nnpm install next@15 react@19 react-dom@19 next-auth@5\.0\.0-beta\.32 jose@6\n```\n/);
    expect(md).toContain('\n## Prompt for a coding agent\n');
    // The prompt's own sections sit one level below the document's.
    expect(md).toContain('\n### What svc is\n');
    expect(md).not.toMatch(/^## What svc is$/m);
    expect(md).not.toContain(app.secretKey);
    expect(md).not.toMatch(/sk_live_[0-9A-Za-z]{4,}/);
  });

  it('format is json or markdown in any case; anything else is 400 unsupported_format, a repeat 400 validation_failed', async () => {
    expect((await fetch(`${server.url}/v1/setup/agent-context?keyless=1&format=Markdown`)).headers.get('content-type')).toBe(
      'text/markdown; charset=utf-8',
    );
    expect((await fetch(`${server.url}/v1/setup/agent-context?keyless=1&format=json`)).headers.get('content-type')).toMatch(
      /^application\/json/,
    );
    for (const [query, code] of [
      ['format=html', 'unsupported_format'],
      ['format=md%00', 'validation_failed'],
      ['format=markdown&format=json', 'validation_failed'],
    ] as const) {
      const res = await fetch(`${server.url}/v1/setup/agent-context?keyless=1&${query}`);
      expect(res.status, query).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code, query).toBe(code);
      if (code === 'unsupported_format') {
        expect(body.error.message).toBe('unsupported format "html"; allowed values: json, markdown');
      }
    }
  });

  it('an ETag of the answer: If-None-Match answers 304 with no body, for JSON and Markdown alike', async () => {
    const app = await seedApplication(server.services.db);
    for (const query of ['framework=rest', 'framework=rest&format=markdown']) {
      const first = await context(app.publishableKey, query);
      const tag = first.headers.get('etag');
      expect(tag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
      expect(first.headers.get('cache-control')).toBe('no-cache');
      await first.text();
      const again = await context(app.publishableKey, query);
      expect(again.headers.get('etag')).toBe(tag);
      await again.text();
      const notModified = await context(app.publishableKey, query, { 'if-none-match': tag as string });
      expect(notModified.status).toBe(304);
      expect(await notModified.text()).toBe('');
      expect(notModified.headers.get('etag')).toBe(tag);
      const other = await context(app.publishableKey, query, { 'if-none-match': '"something-else"' });
      expect(other.status).toBe(200);
      await other.text();
    }
    const json = (await context(app.publishableKey, 'framework=rest')).headers.get('etag');
    const md = (await context(app.publishableKey, 'framework=rest&format=markdown')).headers.get('etag');
    expect(json).not.toBe(md);
  });

  it("the ETag changes when the application's redirect URLs change, and not when its secret key is rotated", async () => {
    const { application, call } = await adminApplication({ redirectUrls: ['https://shop.example.com/auth/callback'] });
    const tagOf = async (query = 'framework=express') => {
      const res = await context(application.publishableKey, query);
      expect(res.status).toBe(200);
      await res.text();
      return res.headers.get('etag') as string;
    };
    const before = await tagOf();
    const beforeMd = await tagOf('framework=express&format=markdown');

    await call('POST', `/v1/applications/${application.id}/rotate-secret`, {});
    expect(await tagOf()).toBe(before);
    expect((await context(application.publishableKey, 'framework=express', { 'if-none-match': before })).status).toBe(304);

    await call('PATCH', `/v1/applications/${application.id}`, {
      redirectUrls: ['https://shop.example.com/auth/callback', 'https://shop.example.com/cb2'],
    });
    const changed = await context(application.publishableKey, 'framework=express', { 'if-none-match': before });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(before);
    expect(((await changed.json()) as Ctx).redirectUrls).toContain('https://shop.example.com/cb2');
    expect(await tagOf('framework=express&format=markdown')).not.toBe(beforeMd);
  });
});

describe("the permission the generated app checks, read from the product's catalog", () => {
  type PermissionCtx = { permissionCheck: { permission: string; source: string; resource: unknown }; aiAgentPrompt: string };
  const get = async (query: string) => {
    const res = await fetch(`${server.url}/v1/setup/agent-context?${query}`);
    expect(res.status).toBe(200);
    return { tag: res.headers.get('etag'), body: (await res.json()) as PermissionCtx };
  };

  it('names an example while no API declares a permission, then the first permission of the first API by name; the ETag follows', async () => {
    const app = await seedApplication(server.services.db);
    const sql = server.services.sql;
    const before = await get(`publishable_key=${app.publishableKey}&framework=express`);
    expect(before.body.permissionCheck).toEqual({ permission: 'invoices.read', source: 'example', resource: null });
    expect(before.body.aiAgentPrompt).toContain("const CHECKED_PERMISSION = 'invoices.read';");

    try {
      // An API without permissions sorts first and is skipped; Billing's permissions by name: invoices.archive first.
      await sql`insert into api_resources (id, identifier, name) values
        ('res_analyticsanalyticsan', 'https://api.analytics.example', 'Analytics'),
        ('res_billingbillingbillin', 'https://api.billing.example', 'Billing'),
        ('res_zetazetazetazetazeta', 'https://api.zeta.example', 'Zeta')`;
      await sql`insert into api_permissions (id, resource_id, name) values
        ('prm_billingwritebilling', 'res_billingbillingbillin', 'invoices.write'),
        ('prm_billingarchivebilli', 'res_billingbillingbillin', 'invoices.archive'),
        ('prm_zetareadzetareadzet', 'res_zetazetazetazetazeta', 'aaa.read')`;

      for (const query of [`publishable_key=${app.publishableKey}&framework=express`, 'keyless=1&framework=flask']) {
        const after = await get(query);
        expect(after.body.permissionCheck, query).toEqual({
          permission: 'invoices.archive',
          source: 'catalog',
          resource: { identifier: 'https://api.billing.example', name: 'Billing' },
        });
        expect(after.body.aiAgentPrompt).toContain('resource=https://api.billing.example');
        expect(after.body.aiAgentPrompt).not.toContain('invoices.read');
      }
      const after = await get(`publishable_key=${app.publishableKey}&framework=express`);
      expect(after.tag).not.toBe(before.tag);
      const md = await (await fetch(`${server.url}/v1/setup/agent-context?publishable_key=${app.publishableKey}&format=markdown`)).text();
      expect(md).toContain('\n## Permission the app checks\n\n- Permission: `invoices.archive`\n');
      expect(md).toContain('declared by the API Billing (identifier `https://api.billing.example`)');
    } finally {
      await sql`delete from api_resources where id in ('res_analyticsanalyticsan', 'res_billingbillingbillin', 'res_zetazetazetazetazeta')`;
    }
    expect((await get(`publishable_key=${app.publishableKey}&framework=express`)).tag).toBe(before.tag);
  });
});

describe('GET /llms.txt', () => {
  /** Every Markdown link of the document. */
  const linksOf = (doc: string) => [...doc.matchAll(/\[([^\]]+)\]\(([^)\s]+)\)/g)].map((m) => m[2] as string);

  async function expectLlmsTxt(target: Awaited<ReturnType<typeof startTestServer>>) {
    const res = await fetch(`${target.url}/llms.txt`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const doc = await res.text();
    // llmstxt.org: an H1, then a blockquote summary, then H2 sections of link lists.
    const lines = doc.split('\n');
    expect(lines[0]).toBe('# svc');
    expect(lines[2]?.startsWith('> ')).toBe(true);
    expect(doc).toMatch(/\n## API\n\n- \[OpenAPI document\]\(/);
    expect(doc).toMatch(/\n## Optional\n/);
    const links = linksOf(doc);
    expect(links.length).toBeGreaterThanOrEqual(4);
    for (const link of links) {
      expect(link.startsWith(`${target.services.config.publicUrl}/`), link).toBe(true);
      const answer = await fetch(link);
      expect(answer.status, link).toBe(200);
      await answer.arrayBuffer();
    }
    return { doc, links };
  }

  it('links the markdown context of every framework, the OpenAPI and discovery documents, and each link answers 200', async () => {
    const { links } = await expectLlmsTxt(server);
    for (const framework of SUPPORTED_FRAMEWORKS) {
      expect(links).toContain(
        `${server.services.config.publicUrl}/v1/setup/agent-context?keyless=1&framework=${framework}&format=markdown`,
      );
    }
    expect(links).toContain(`${server.services.config.publicUrl}/v1/openapi.json`);
    expect(links).toContain(`${server.services.config.publicUrl}/.well-known/openid-configuration`);
  });

  it('without keyless development it links no keyless context, and every link still answers 200', async () => {
    const closed = await startTestServer({ env: { KEYLESS_ENABLED: 'false' } });
    try {
      const { doc, links } = await expectLlmsTxt(closed);
      expect(links.some((l) => l.includes('keyless=1'))).toBe(false);
      expect(doc).toContain('/v1/setup/agent-context?publishable_key=pk_live_...&framework=<framework>&format=markdown');
    } finally {
      await closed.close();
    }
  });
});

describe('the OpenAPI document', () => {
  it('documents format, the Markdown answer, the ETag, 304 and unsupported_format', async () => {
    const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as any;
    const op = doc.paths['/setup/agent-context'].get;
    expect(op.parameters.map((p: { name: string }) => p.name)).toContain('format');
    expect(Object.keys(op.responses['200'].content)).toEqual(['application/json', 'text/markdown']);
    expect(op.responses['200'].headers.ETag).toBeDefined();
    expect(op.responses['304']).toBeDefined();
    expect(op.responses['400'].description).toContain('unsupported_format');
  });
});

describe('If-None-Match', () => {
  it('matches *, any listed tag, and weak forms of the tag; nothing else', () => {
    const tag = '"abc"';
    for (const header of ['"abc"', '*', ' * ', 'W/"abc"', '"x", "abc"', '"x",W/"abc"']) {
      expect(noneMatch(header, tag), header).toBe(true);
    }
    for (const header of [undefined, '', '"abcd"', 'abc', '"x", "y"', '"ab"c"']) {
      expect(noneMatch(header, tag), String(header)).toBe(false);
    }
  });
});
