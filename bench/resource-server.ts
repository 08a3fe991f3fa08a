/**
 * `BENCH_ONLY=resource-server`: the verification of @svc/resource-server (issue 34 "Figures"):
 * `verify()` of one of svc's access tokens (RS256, `typ` at+jwt, for this API, one permission
 * required) against a bare `jose.jwtVerify` of the same token with the public key in hand, in the
 * same process, slices A B B A per round, best slice each. The package finds the key through the
 * authorization server metadata and JWKS of a loopback server (fetched once, then cached), as it
 * does svc's. Target: at least 0.9x of bare jose.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createResourceServer } from '@svc/resource-server';
import { exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import type { BenchContext, Verdict } from './support.ts';

export const RESOURCE_SERVER_SCENARIOS = ['resource-server'] as const;
export const RESOURCE_SERVER_TARGETS = { verifyMin: 0.9 };

const RESOURCE = 'https://mcp.bench.example/mcp';

/** Verifications per second of `verify` over `ms` (sequential, awaited one by one as a server does). */
async function rate(verify: () => Promise<unknown>, ms: number): Promise<number> {
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 200; i++) {
      await verify();
    }
    n += 200;
    now = performance.now();
  }
  return n / ((now - start) / 1000);
}

export async function runResourceServerBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('resource-server')) {
    return { verdicts: [], results: {} };
  }
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' };
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url === '/jwks' ? { keys: [jwk] } : { issuer, jwks_uri: `${issuer}/jwks` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const token = await new SignJWT({ client_id: 'app_bench', scope: 'notes.read notes.write', org_id: 'ten_bench' })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'bench' })
      .setIssuer(issuer)
      .setAudience(RESOURCE)
      .setSubject('usr_bench')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    const rs = createResourceServer({ issuer, resource: RESOURCE });
    const header = `Bearer ${token}`;
    const sides = {
      'bare jose.jwtVerify': () => jwtVerify(token, publicKey, { issuer, audience: RESOURCE, typ: 'at+jwt', algorithms: ['RS256'] }),
      '@svc/resource-server verify': () => rs.verify(header, ['notes.read']),
    };
    const sliceMs = ctx.smoke ? 200 : 2000;
    const best: Record<string, number> = {};
    ctx.log(`measuring: verification of one access token, ${sliceMs} ms slices, A B B A per round`);
    for (const side of Object.values(sides)) {
      await rate(side, ctx.smoke ? 50 : 500);
    }
    for (let round = 1; round <= ctx.rounds; round++) {
      const order = Object.entries(sides);
      for (const [label, verify] of [...order, ...[...order].reverse()]) {
        const r = await rate(verify, sliceMs);
        best[label] = Math.max(best[label] ?? 0, r);
        ctx.log(
          `  resource-server      round ${round} ${label.padEnd(28)} ${Math.round(r).toLocaleString('en-US').padStart(7)} verifications/s`,
        );
      }
    }
    const bare = best['bare jose.jwtVerify'] ?? Number.NaN;
    const ours = best['@svc/resource-server verify'] ?? Number.NaN;
    const ratio = ours / bare;
    return {
      verdicts: [
        {
          name: `resource-server: verify >= ${RESOURCE_SERVER_TARGETS.verifyMin}x bare jose.jwtVerify`,
          pass: ratio >= RESOURCE_SERVER_TARGETS.verifyMin,
          detail: `${ratio.toFixed(2)} (${Math.round(ours)} vs ${Math.round(bare)} verifications/s)`,
        },
      ],
      results: { resourceServer: { targets: RESOURCE_SERVER_TARGETS, bare, verify: ours, ratio } },
    };
  } finally {
    server.close();
  }
}
