import { BaseResolver, createConfig, lintFromString, type NormalizedProblem } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from './openapi.ts';

/**
 * Findings of Redocly's recommended ruleset that svc accepts, by rule, each with why. Anything
 * else it reports, error or warning, fails the test: fix the document (openapi.ts or the
 * procedures' meta), not the rules.
 */
const ACCEPTED: Readonly<Record<string, string>> = {
  'info-license':
    'svc states no license (a private package, no LICENSE file): naming one in the document would be a claim nobody made. Set info.license when the owner picks one, and drop this.',
};

/**
 * Rules added to the recommended set: every operation's tag is one of the document's tags, so
 * tag-description (a warning there) covers every tag an operation uses.
 */
const ADDED_RULES = { 'operation-tag-defined': 'error' } as const;

/** The document is ours and has no external $ref: a fetch for one is a bug, never a download. */
const offline = new BaseResolver({
  http: {
    headers: [],
    customFetch: (url: string) => {
      throw new Error(`the OpenAPI lint reached for ${url}; it must run offline`);
    },
  },
});

async function lint(doc: unknown): Promise<NormalizedProblem[]> {
  const config = await createConfig({ extends: ['recommended'], rules: ADDED_RULES, telemetry: 'off' });
  return lintFromString({ source: JSON.stringify(doc, null, 2), absoluteRef: 'openapi.json', config, externalRefResolver: offline });
}

const show = (p: NormalizedProblem) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location[0]?.pointer ?? '?'})`;

describe("the OpenAPI document against Redocly's recommended ruleset", () => {
  it('has no error and no warning beyond the accepted ones', async () => {
    const problems = await lint(buildOpenApiDocument('https://svc.example.test'));
    expect(problems.filter((p) => !(p.ruleId in ACCEPTED)).map(show)).toEqual([]);
    // An exception nothing needs any more goes.
    const seen = new Set(problems.map((p) => p.ruleId));
    expect(Object.keys(ACCEPTED).filter((rule) => !seen.has(rule))).toEqual([]);
  });

  it('is a live ruleset: it reports what the document once had (a trailing slash, an undeclared tag, no summary)', async () => {
    const doc = buildOpenApiDocument('https://svc.example.test') as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const { '/tenants/{id}': tenant, ...paths } = doc.paths;
    const { summary: _summary, ...get }: Record<string, unknown> = { ...tenant?.get, tags: ['nowhere'] };
    const problems = await lint({ ...doc, paths: { ...paths, '/tenants/{id}/': { ...tenant, get } } });
    expect(new Set(problems.filter((p) => p.severity === 'error').map((p) => p.ruleId))).toEqual(
      new Set(['no-path-trailing-slash', 'operation-tag-defined', 'operation-summary']),
    );
  });
});
