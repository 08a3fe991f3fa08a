/**
 * `BENCH_ONLY=sso-acs`: an SSO sign-in's cost at svc (issue 33 "Figures"): the SAML ACS (validate
 * the signed response + just-in-time membership + session) against the OIDC connection's callback
 * (code exchange + ID token verification + the same membership and session), in the same run, on
 * the same svc process and database.
 *
 * One `svc serve` (NODE_ENV=test, LOG_LEVEL=warn) on a fresh database; one organization with a
 * verified domain and two connections: SAML to samlify's IdP and OIDC to a bare oidc-provider,
 * both in this process. For each of BENCH_SSO_SIGNINS sign-ins (200; smoke 10), one after the
 * other, a new person: the IdP's side (AuthnRequest parsed and response signed by samlify, or the
 * oidc-provider interaction) is not timed; only the request that ends at svc is (POST to the ACS,
 * GET of the callback), until its 303 with the session cookie. Sign-ins/s = count / the sum of
 * those times. Target: SAML >= 0.5x OIDC.
 */
import { randomBytes } from 'node:crypto';
import { startOp } from '../apps/api/src/modules/sso/oidc-idp.fixtures.ts';
import { requestIdOf, startSamlIdp } from '../apps/api/src/modules/sso/saml-idp.fixtures.ts';
import { oidcSecretContext } from '../apps/api/src/modules/sso/secret-context.ts';
import { newId } from '../packages/contracts/src/ids.ts';
import { createDatabase } from '../packages/db/src/client.ts';
import { organizationDomains } from '../packages/db/src/schema/domains.ts';
import { organizations } from '../packages/db/src/schema/organizations.ts';
import { ssoConnections } from '../packages/db/src/schema/sso.ts';
import { createSecretBox } from '../packages/db/src/secret-box.ts';
import { CookieJar } from '../test/support/oidc-browser.ts';
import { type BenchContext, fmt, healthy, positiveSetting, startServerChild, type Verdict } from './support.ts';

export const SSO_SCENARIOS = ['sso-acs'] as const;
export const SSO_TARGETS = { samlToOidcMinRatio: 0.5 };

export async function runSsoBenches(
  ctx: BenchContext,
  wanted: (scenario: string) => boolean,
): Promise<{ verdicts: Verdict[]; results: Record<string, unknown> }> {
  if (!wanted('sso-acs')) {
    return { verdicts: [], results: {} };
  }
  const count = ctx.smoke ? 10 : positiveSetting('BENCH_SSO_SIGNINS', 200);
  const db = await ctx.createDb('sso');
  await ctx.runCli(['migrate'], db.url);
  const key = randomBytes(32);
  const idp = await startSamlIdp();
  const op = await startOp();
  const svc = await startServerChild(ctx, {
    kind: 'svc',
    label: 'svc',
    script: [ctx.cli, 'serve'],
    env: {
      DATABASE_URL: db.url,
      NODE_ENV: 'test',
      DEV_ENGINE_PORT: '0',
      SVC_ENCRYPTION_KEY: key.toString('base64'),
      LOG_LEVEL: 'warn',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_SIGNIN_PER_MINUTE: '1000000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
    },
    ready: healthy,
  });
  const database = createDatabase({ url: db.url, max: 2, applicationName: 'svc-bench-sso' });
  try {
    const tenantId = newId('organization');
    const domain = 'bench-sso.example';
    await database.db
      .insert(organizations)
      .values({ id: tenantId, slug: `bench-sso-${tenantId.slice(-6).toLowerCase()}`, name: 'Bench SSO', kind: 'tenant' });
    // Every sign-in makes a new member: seats enough for all of them (the default plan has 10).
    await database.sql`update subscriptions set seats = 1000000 where tenant_id = ${tenantId}`;
    await database.db
      .insert(organizationDomains)
      .values({ id: newId('domain'), tenantId, domain, verificationToken: 'x', verifiedAt: new Date() });
    const samlId = newId('ssoConnection');
    const oidcId = newId('ssoConnection');
    const mapping = { email: 'email', name: 'name', groups: 'groups' };
    await database.db.insert(ssoConnections).values([
      {
        id: samlId,
        tenantId,
        name: 'SAML',
        protocol: 'saml',
        samlIdpEntityId: idp.entityId,
        samlIdpSsoUrl: `${idp.url}/sso`,
        samlIdpCertificates: [idp.cert],
        attributeMapping: mapping,
      },
      {
        id: oidcId,
        tenantId,
        name: 'OIDC',
        protocol: 'oidc',
        oidcIssuer: op.issuer,
        oidcClientId: 'svc',
        oidcClientSecretSealed: createSecretBox(key).seal('svc-secret-svc-secret-svc-secret', oidcSecretContext(oidcId)),
        attributeMapping: mapping,
      },
    ]);
    op.setClient(`${svc.url}/sso/oidc/${oidcId}/callback`);
    const spMetadata = await (await fetch(`${svc.url}/sso/saml/${samlId}/metadata`)).text();

    async function samlSignIn(i: number): Promise<number> {
      const jar = new CookieJar();
      const start = await jar.fetch(`${svc.url}/sso/${samlId}/start`);
      const location = new URL(start.headers.get('location') ?? '');
      const response = await idp.respond({
        spMetadata,
        inResponseTo: requestIdOf(location.searchParams.get('SAMLRequest') ?? ''),
        user: { email: `saml-${i}@${domain}`, name: `Saml ${i}` },
      });
      const body = new URLSearchParams({ SAMLResponse: response, RelayState: location.searchParams.get('RelayState') ?? '' }).toString();
      const t0 = performance.now();
      const res = await jar.fetch(`${svc.url}/sso/saml/${samlId}/acs`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      const ms = performance.now() - t0;
      if (res.status !== 303) {
        throw new Error(`SAML ACS answered ${res.status}: ${(await res.text()).slice(-400)}`);
      }
      return ms;
    }

    async function oidcSignIn(i: number): Promise<number> {
      op.person = { sub: `oidc-${i}`, email: `oidc-${i}@${domain}`, email_verified: true, name: `Oidc ${i}`, groups: [] };
      const jar = new CookieJar();
      let current = `${svc.url}/sso/${oidcId}/start`;
      for (let hop = 0; hop < 20; hop++) {
        if (current.startsWith(`${svc.url}/sso/oidc/`)) {
          const t0 = performance.now();
          const res = await jar.fetch(current);
          const ms = performance.now() - t0;
          if (res.status !== 303) {
            throw new Error(`OIDC callback answered ${res.status}: ${(await res.text()).slice(-400)}`);
          }
          return ms;
        }
        const res = await jar.fetch(current);
        current = new URL(res.headers.get('location') ?? '', current).href;
      }
      throw new Error('the OIDC sign-in never reached the callback');
    }

    // Warm both paths (discovery, JWKS, node-saml's first parse).
    await samlSignIn(-1);
    await oidcSignIn(-1);
    let samlMs = 0;
    let oidcMs = 0;
    for (let i = 0; i < count; i++) {
      // Interleaved: the machine's load falls on both alike.
      samlMs += await samlSignIn(i);
      oidcMs += await oidcSignIn(i);
    }
    const saml = count / (samlMs / 1000);
    const oidc = count / (oidcMs / 1000);
    const ratio = saml / oidc;
    ctx.log(
      `sso-acs: SAML ACS ${fmt(saml, 1)} sign-ins/s, OIDC callback ${fmt(oidc, 1)} sign-ins/s, ratio ${ratio.toFixed(2)} (${count} each)`,
    );
    return {
      verdicts: [
        {
          name: 'sso-acs',
          pass: ratio >= SSO_TARGETS.samlToOidcMinRatio,
          detail: `SAML ACS ${fmt(saml, 1)}/s vs OIDC callback ${fmt(oidc, 1)}/s = ${ratio.toFixed(2)}x (target >= ${SSO_TARGETS.samlToOidcMinRatio}x)`,
        },
      ],
      results: { signIns: count, samlPerSecond: saml, oidcPerSecond: oidc, ratio, samlMeanMs: samlMs / count, oidcMeanMs: oidcMs / count },
    };
  } finally {
    await database.close();
    await svc.stop();
    await idp.close();
    await op.close();
  }
}
