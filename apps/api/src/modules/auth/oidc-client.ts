import { CodeChallengeMethod, generateCodeVerifier, generateState, OAuth2Client } from 'arctic';
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose';
import { z } from 'zod';

/** The parts of the engine's discovery document svc relies on. */
const ZDiscovery = z.object({
  issuer: z.string(),
  authorization_endpoint: z.url(),
  token_endpoint: z.url(),
  jwks_uri: z.url(),
  end_session_endpoint: z.url().optional(),
  userinfo_endpoint: z.url().optional(),
});
export type Discovery = z.infer<typeof ZDiscovery>;

export type RelyingPartySettings = {
  issuer: string;
  clientId: string;
  /** Null for a public client (PKCE alone). */
  clientSecret: string | null;
  redirectUri: string;
  scopes: string[];
  /** The claim that carries group names (Authentik: `groups`). */
  groupsClaim: string;
};

/** What svc takes from a verified ID token. */
export type VerifiedIdentity = { subject: string; email: string; emailVerified: boolean; name: string; groups: string[] };

/** A started authorization: the secrets go into the pending-login cookie, the URL to the browser. */
export type StartedAuthorization = { url: URL; state: string; nonce: string; codeVerifier: string };

/** What the engine answered when it refused a request: logged as it is (never a code or a secret). */
export type EngineRefusal = { status: number; error?: string; error_description?: string };

export class OidcError extends Error {
  override name = 'OidcError';
  constructor(
    message: string,
    /** The engine's OAuth error answer, when the engine refused. */
    readonly engine?: EngineRefusal,
  ) {
    super(message);
  }
}

/** The OAuth error fields of an engine's error answer (RFC 6749 5.2), bounded, when it has them. */
async function refusalOf(res: Response): Promise<EngineRefusal> {
  const refusal: EngineRefusal = { status: res.status };
  try {
    const body = (await res.json()) as Record<string, unknown>;
    if (typeof body.error === 'string') {
      refusal.error = body.error.slice(0, 200);
    }
    if (typeof body.error_description === 'string') {
      refusal.error_description = body.error_description.slice(0, 500);
    }
  } catch {
    // Not JSON: the status is all there is.
  }
  return refusal;
}

/**
 * svc as an OIDC relying party (docs/architecture.md section 6): arctic runs the authorization-code
 * flow with PKCE (S256); jose verifies the ID token (signature against the engine's JWKS, iss,
 * aud, exp), then we check azp (when present or when there are several audiences) and our
 * nonce. arctic only decodes ID tokens: no claim is trusted before jose has verified it.
 */
export class RelyingParty {
  private discovery: Promise<Discovery> | undefined;
  private jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  private readonly client: OAuth2Client;

  constructor(
    private readonly settings: RelyingPartySettings,
    private readonly fetcher: typeof fetch = fetch,
  ) {
    this.client = new OAuth2Client(settings.clientId, settings.clientSecret, settings.redirectUri);
  }

  /** The discovery document, fetched once (a failed fetch is retried on the next call). */
  discover(): Promise<Discovery> {
    this.discovery ??= (async () => {
      const url = `${this.settings.issuer.replace(/\/?$/, '/')}.well-known/openid-configuration`;
      const res = await this.fetcher(url, { signal: AbortSignal.timeout(10_000) });
      if (!res.ok) {
        throw new OidcError(`engine discovery answered ${res.status} at ${url}`);
      }
      const doc = ZDiscovery.parse(await res.json());
      if (doc.issuer !== this.settings.issuer) {
        throw new OidcError(`engine discovery names issuer ${doc.issuer}, expected ${this.settings.issuer}`);
      }
      return doc;
    })().catch((error: unknown) => {
      this.discovery = undefined;
      throw error;
    });
    return this.discovery;
  }

  /** A fresh authorization request: new state, nonce and PKCE verifier every time. */
  async startAuthorization(): Promise<StartedAuthorization> {
    const doc = await this.discover();
    const state = generateState();
    const nonce = generateState();
    const codeVerifier = generateCodeVerifier();
    const url = this.client.createAuthorizationURLWithPKCE(
      doc.authorization_endpoint,
      state,
      CodeChallengeMethod.S256,
      codeVerifier,
      this.settings.scopes,
    );
    url.searchParams.set('nonce', nonce);
    return { url, state, nonce, codeVerifier };
  }

  /**
   * Exchanges the code (with the PKCE verifier) and verifies the ID token. Throws OidcError for
   * anything that does not check out; the caller answers the browser without details.
   */
  async completeAuthorization(input: {
    code: string;
    codeVerifier: string;
    nonce: string;
  }): Promise<{ identity: VerifiedIdentity; idToken: string }> {
    const doc = await this.discover();
    const idToken = await this.exchangeCode(doc.token_endpoint, input.code, input.codeVerifier);
    this.jwks ??= createRemoteJWKSet(new URL(doc.jwks_uri));
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, this.jwks, {
        issuer: this.settings.issuer,
        audience: this.settings.clientId,
        algorithms: ['RS256', 'ES256', 'EdDSA', 'PS256'],
        // exp is REQUIRED in an ID token (OIDC Core 2); jose checks it only when present, so a
        // token without one would never expire.
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw new OidcError(`ID token rejected: ${(error as Error).message}`);
    }
    // OIDC Core 3.1.3.7: jose checks only that svc is among the audiences. A token for several
    // audiences, or one naming an authorized party, must be authorized for svc: otherwise a token
    // issued to another client that merely lists svc too would sign someone in here.
    const severalAudiences = Array.isArray(payload.aud) && payload.aud.length > 1;
    if ((severalAudiences || payload.azp !== undefined) && payload.azp !== this.settings.clientId) {
      throw new OidcError('ID token rejected: it is authorized for another client (azp)');
    }
    if (payload.nonce !== input.nonce) {
      throw new OidcError('ID token nonce does not match this sign-in');
    }
    return { identity: this.identityFrom(payload), idToken };
  }

  /**
   * The token request of the authorization-code grant (RFC 6749 4.1.3, with RFC 7636's verifier),
   * client_secret_basic for a confidential client. Made here rather than by arctic so that an
   * engine's refusal keeps its status, `error` and `error_description` (arctic reads the body of
   * a 400 or 401 only, and drops the status): what an operator needs to fix the client's settings.
   */
  private async exchangeCode(tokenEndpoint: string, code: string, codeVerifier: string): Promise<string> {
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: this.settings.redirectUri,
      code_verifier: codeVerifier,
    });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (this.settings.clientSecret === null) {
      body.set('client_id', this.settings.clientId);
    } else {
      // RFC 6749 2.3.1: each part form-encoded before base64.
      const form = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
      headers.authorization = `Basic ${Buffer.from(`${form(this.settings.clientId)}:${form(this.settings.clientSecret)}`).toString('base64')}`;
    }
    let res: Response;
    try {
      res = await this.fetcher(tokenEndpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    } catch (error) {
      throw new OidcError(`token exchange failed: the engine's token endpoint is unreachable (${(error as Error).message})`);
    }
    if (!res.ok) {
      const refusal = await refusalOf(res);
      throw new OidcError(
        `token exchange failed: the engine answered ${refusal.status} ${refusal.error ?? 'without an OAuth error'}`,
        refusal,
      );
    }
    let tokens: Record<string, unknown>;
    try {
      tokens = (await res.json()) as Record<string, unknown>;
    } catch {
      throw new OidcError(`token exchange failed: the engine answered ${res.status} without JSON`);
    }
    if (typeof tokens.id_token !== 'string' || tokens.id_token === '') {
      throw new OidcError('the engine returned no ID token');
    }
    return tokens.id_token;
  }

  /**
   * The engine's end-session URL for logout, when it has one. `state` comes back on the
   * post_logout_redirect_uri (RP-Initiated Logout 1.0), which is how svc resumes a logout there.
   */
  async endSessionUrl(opts: { idTokenHint?: string; postLogoutRedirectUri: string; state?: string }): Promise<URL | undefined> {
    const doc = await this.discover();
    if (!doc.end_session_endpoint) {
      return undefined;
    }
    const url = new URL(doc.end_session_endpoint);
    url.searchParams.set('client_id', this.settings.clientId);
    url.searchParams.set('post_logout_redirect_uri', opts.postLogoutRedirectUri);
    if (opts.idTokenHint) {
      url.searchParams.set('id_token_hint', opts.idTokenHint);
    }
    if (opts.state) {
      url.searchParams.set('state', opts.state);
    }
    return url;
  }

  private identityFrom(payload: JWTPayload): VerifiedIdentity {
    const email = typeof payload.email === 'string' ? payload.email : '';
    if (!payload.sub || !email) {
      throw new OidcError('ID token lacks sub or email (request the email scope)');
    }
    const rawGroups = payload[this.settings.groupsClaim];
    const groups = Array.isArray(rawGroups) ? rawGroups.filter((g): g is string => typeof g === 'string') : [];
    return {
      subject: payload.sub,
      email,
      emailVerified: payload.email_verified === true,
      name: typeof payload.name === 'string' ? payload.name : '',
      groups,
    };
  }
}
