/**
 * `BENCH_ONLY=metadata-documents`: a third-party client identified by a Client ID Metadata
 * Document against a registered application, at svc's authorization endpoint (issue 34 "Figures").
 * One `svc serve` (NODE_ENV=production, WEBHOOK_ALLOW_PRIVATE so that the documents may be on
 * loopback); one https server on loopback publishing a document at any path. Measured, one
 * request at a time, interleaved A B C per iteration: `GET /oidc/auth` (code flow with PKCE) until
 * svc answers with the redirect to its sign-in interaction, for
 * - the registered application (its client from the application cache);
 * - a metadata-document client seen for the first time (a new document URL each request: svc
 *   fetches, validates and caches it);
 * - a metadata-document client already seen (the same URL again: the cache).
 * Targets: the first authorization's median at most 50 ms above the registered client's; the
 * cached one's median within 5% of it.
 */
import { createHash, randomBytes } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { LOOPBACK_TLS } from '../test/support/loopback-tls.ts';
import { type BenchContext, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';

export const METADATA_DOCUMENT_SCENARIOS = ['metadata-documents'] as const;
export const METADATA_DOCUMENT_TARGETS = { firstMaxExtraMs: 50, cachedMaxRatio: 1.05 };

const CALLBACK = 'http://127.0.0.1:53197/callback';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export async function runMetadataDocumentBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('metadata-documents')) {
    return { verdicts: [], results: {} };
  }
  const iterations = Math.round(positiveSetting('BENCH_CIMD_ITERATIONS', ctx.smoke ? 20 : 200));
  const docs = https.createServer({ key: LOOPBACK_TLS.key, cert: LOOPBACK_TLS.cert }, (req, res) => {
    const path = new URL(req.url ?? '/', 'https://127.0.0.1').pathname;
    const body = JSON.stringify({
      client_id: `${origin}${path}`,
      client_name: 'Bench agent',
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: 'none',
    });
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=3600' }).end(body);
  });
  await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', () => resolve()));
  const origin = `https://127.0.0.1:${(docs.address() as AddressInfo).port}`;
  const db = await ctx.createDb('metadata_documents');
  await ctx.runCli(['migrate'], db.url);
  const created = JSON.parse(
    await ctx.runCli(['apps', 'create', '--org', 'bench', '--name', 'Bench app', '--client-type', 'public', '--json'], db.url),
  ) as { application: { id: string } };
  const { default: postgres } = await import('postgres');
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  await sql`update applications set redirect_urls = ${[CALLBACK]} where id = ${created.application.id}`;
  await sql.end();
  const svc = await startServerChild(ctx, {
    kind: 'svc',
    label: 'svc-metadata-documents',
    script: [ctx.cli, 'serve'],
    env: {
      DATABASE_URL: db.url,
      NODE_ENV: 'production',
      ENGINE_ISSUER: 'http://127.0.0.1:3001/application/o/svc/',
      SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      WORKER_ENABLED: 'false',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
      RATE_LIMIT_SIGNIN_PER_MINUTE: '1000000000',
    },
    ready: healthy,
  });
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  /** One authorization request until svc's redirect to its interaction; its time in ms. */
  const authorize = async (clientId: string): Promise<number> => {
    const params = new URLSearchParams({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'openid',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const start = performance.now();
    const res = await fetch(`${svc.url}/oidc/auth?${params}`, { redirect: 'manual' });
    await res.arrayBuffer();
    const ms = performance.now() - start;
    const location = res.headers.get('location') ?? '';
    if (res.status !== 303 || !location.includes('/oidc/interaction/')) {
      throw new Error(`authorization of ${clientId} answered ${res.status} ${location}`);
    }
    return ms;
  };
  try {
    const cached = `${origin}/agents/cached.json`;
    const sides = { registered: [] as number[], 'metadata document, first': [] as number[], 'metadata document, cached': [] as number[] };
    // Warm up: both paths compiled, the cached document fetched once.
    for (let i = 0; i < (ctx.smoke ? 5 : 30); i++) {
      await authorize(created.application.id);
      await authorize(`${origin}/warm/${i}.json`);
      await authorize(cached);
    }
    ctx.log(`measuring: GET /oidc/auth until the redirect to sign-in, ${iterations} of each, one at a time, interleaved`);
    for (let i = 0; i < iterations; i++) {
      sides.registered.push(await authorize(created.application.id));
      sides['metadata document, first'].push(await authorize(`${origin}/agents/${i}-${randomBytes(4).toString('hex')}.json`));
      sides['metadata document, cached'].push(await authorize(cached));
    }
    const medians = Object.fromEntries(Object.entries(sides).map(([k, v]) => [k, median(v)])) as Record<keyof typeof sides, number>;
    for (const [label, value] of Object.entries(medians)) {
      ctx.log(`  metadata-documents   ${label.padEnd(28)} median ${value.toFixed(2)} ms`);
    }
    const extra = medians['metadata document, first'] - medians.registered;
    const ratio = medians['metadata document, cached'] / medians.registered;
    return {
      verdicts: [
        {
          name: `metadata-documents: first authorization <= registered + ${METADATA_DOCUMENT_TARGETS.firstMaxExtraMs} ms (median)`,
          pass: extra <= METADATA_DOCUMENT_TARGETS.firstMaxExtraMs,
          detail: `+${extra.toFixed(2)} ms (${medians['metadata document, first'].toFixed(2)} vs ${medians.registered.toFixed(2)} ms)`,
        },
        {
          name: `metadata-documents: later authorizations <= ${METADATA_DOCUMENT_TARGETS.cachedMaxRatio}x registered (median, cache)`,
          pass: ratio <= METADATA_DOCUMENT_TARGETS.cachedMaxRatio,
          detail: `${ratio.toFixed(3)}x (${medians['metadata document, cached'].toFixed(2)} vs ${medians.registered.toFixed(2)} ms)`,
        },
      ],
      results: { metadataDocuments: { targets: METADATA_DOCUMENT_TARGETS, medians, extraMs: extra, cachedRatio: ratio } },
    };
  } finally {
    await svc.stop();
    docs.close();
  }
}
