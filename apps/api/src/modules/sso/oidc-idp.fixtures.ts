import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK } from 'jose';
import Provider from 'oidc-provider';

// A customer's OIDC IdP: a bare oidc-provider (code svc did not write), whose interactions sign in
// whoever the test says, and whose JWKS the test may swap for a key that did not sign anything.

export type Person = { sub: string; email: string; email_verified: boolean; name: string; groups: string[] };

export type TestOp = {
  issuer: string;
  person: Person;
  wrongJwks: boolean;
  close: () => Promise<void>;
  setClient: (redirectUri: string) => void;
};

export async function startOp(): Promise<TestOp> {
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const state = {
    person: { sub: 'p1', email: 'nobody@example.com', email_verified: true, name: '', groups: [] } as Person,
    wrongJwks: false,
  };
  let provider: Provider | undefined;
  const other = await exportJWK(generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey);
  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      if (!provider) {
        res.writeHead(503).end();
        return;
      }
      if (state.wrongJwks && req.url === '/jwks') {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ keys: [{ ...other, kid: 'x', use: 'sig', alg: 'RS256' }] }));
        return;
      }
      if (req.url?.startsWith('/interaction/')) {
        const details = await provider.interactionDetails(req, res);
        if (details.prompt.name === 'login') {
          await provider.interactionFinished(req, res, { login: { accountId: state.person.sub } }, { mergeWithLastSubmission: false });
          return;
        }
        const grant = new provider.Grant({ accountId: details.session?.accountId ?? '', clientId: String(details.params.client_id) });
        grant.addOIDCScope('openid email profile');
        await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
        return;
      }
      provider.callback()(req, res);
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  return {
    issuer,
    get person() {
      return state.person;
    },
    set person(p: Person) {
      state.person = p;
    },
    get wrongJwks() {
      return state.wrongJwks;
    },
    set wrongJwks(v: boolean) {
      state.wrongJwks = v;
    },
    setClient(redirectUri: string) {
      provider = new Provider(issuer, {
        clients: [
          {
            client_id: 'svc',
            client_secret: 'svc-secret-svc-secret-svc-secret',
            redirect_uris: [redirectUri],
            response_types: ['code'],
            grant_types: ['authorization_code'],
          },
        ],
        findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ ...state.person, sub: id }) }),
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
        conformIdTokenClaims: false,
        pkce: { required: () => true },
      });
    },
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
}
