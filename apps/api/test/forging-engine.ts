import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DevEngine } from '@svc/dev-engine/engine';
import { createRemoteJWKSet, exportJWK, generateKeyPair, type JWTPayload, jwtVerify, SignJWT } from 'jose';

/** Turns the claims the engine vouched for into the ID token svc receives. */
export type Forge = (claims: JWTPayload) => string | Promise<string>;

export type ForgingEngine = {
  /** `http://127.0.0.1:<port>/application/o/svc/`: what svc is configured with as ENGINE_ISSUER. */
  issuer: string;
  /** The `kid` of the engine key (published in this engine's JWKS). */
  engineKid: string;
  /** Replaces the ID token of the next code exchange only (one shot, so no test leaks into the next). */
  forgeNext(forge: Forge): void;
  /** Signs as the engine: RS256 with the key its JWKS publishes. */
  signAsEngine(claims: JWTPayload): Promise<string>;
  /** RS256 with a key the JWKS does not hold; `kid` defaults to the rogue key's own. */
  signWithRogueKey(claims: JWTPayload, opts?: { kid?: string }): Promise<string>;
  close(): Promise<void>;
};

/** An unsecured JWT (`alg: none`, empty signature). */
export function unsignedToken(claims: JWTPayload): string {
  const part = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

/** HS256 keyed with a shared secret, such as the client secret svc and the engine both know. */
export function hs256Token(claims: JWTPayload, secret: string): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/**
 * The engine as svc's relying party sees it, for attack tests: this server's issuer, discovery,
 * JWKS (one RS256 key whose private half the test holds) and token endpoint, in front of a real
 * apps/dev-engine. The browser still signs in at the dev engine (discovery points authorization
 * and end-session there), and the code exchange is forwarded to it with the client's own
 * credentials. Only the ID token is re-minted: from the claims the dev engine signed (verified
 * here first), with `iss` set to this issuer, signed with the engine key, unless the test asked
 * for a forgery with `forgeNext`. So a forged token differs from an accepted one only in what the
 * test changed, and a refusal can be pinned on that change.
 */
export async function startForgingEngine(opts: { engine: DevEngine }): Promise<ForgingEngine> {
  const discovery = await fetch(`${opts.engine.issuer}.well-known/openid-configuration`);
  const upstream = (await discovery.json()) as { issuer: string; token_endpoint: string; jwks_uri: string };
  const upstreamJwks = createRemoteJWKSet(new URL(upstream.jwks_uri));
  const engineKeys = await generateKeyPair('RS256');
  const rogueKeys = await generateKeyPair('RS256');
  const engineKid = randomBytes(8).toString('hex');
  const rogueKid = randomBytes(8).toString('hex');
  const publicJwk = { ...(await exportJWK(engineKeys.publicKey)), kid: engineKid, alg: 'RS256', use: 'sig' };
  let next: Forge | undefined;

  const sign = (claims: JWTPayload, key: typeof engineKeys.privateKey, kid: string) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid }).sign(key);

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => json(res, 500, { error: 'server_error', error_description: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuerPath = '/application/o/svc/';
  const issuer = `${url}${issuerPath}`;
  const tokenPath = '/application/o/token/';
  const jwksPath = `${issuerPath}jwks/`;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', url).pathname;
    if (req.method === 'GET' && path === `${issuerPath}.well-known/openid-configuration`) {
      json(res, 200, { ...upstream, issuer, token_endpoint: `${url}${tokenPath}`, jwks_uri: `${url}${jwksPath}` });
      return;
    }
    if (req.method === 'GET' && path === jwksPath) {
      json(res, 200, { keys: [publicJwk] });
      return;
    }
    if (req.method === 'POST' && path === tokenPath) {
      const headers: Record<string, string> = { 'content-type': req.headers['content-type'] ?? 'application/x-www-form-urlencoded' };
      if (req.headers.authorization) {
        headers.authorization = req.headers.authorization;
      }
      const answer = await fetch(upstream.token_endpoint, { method: 'POST', headers, body: (await readBody(req)).toString() });
      const body = (await answer.json()) as Record<string, unknown>;
      if (answer.ok && typeof body.id_token === 'string') {
        const { payload } = await jwtVerify(body.id_token, upstreamJwks, { issuer: upstream.issuer });
        const claims = { ...payload, iss: issuer };
        const forge = next;
        next = undefined;
        body.id_token = forge ? await forge(claims) : await sign(claims, engineKeys.privateKey, engineKid);
      }
      json(res, answer.status, body);
      return;
    }
    json(res, 404, { error: 'not_found' });
  }

  return {
    issuer,
    engineKid,
    forgeNext(forge) {
      next = forge;
    },
    signAsEngine: (claims) => sign(claims, engineKeys.privateKey, engineKid),
    signWithRogueKey: (claims, o) => sign(claims, rogueKeys.privateKey, o?.kid ?? rogueKid),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
