import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { OIDC_ROUTES } from './paths.ts';

/**
 * The token exchange of the console's try sign-in (http/oidc/try-sign-in.ts), over a loopback listener of
 * this process that hands requests to the provider (`callback`) as svc's public listener does.
 */
export class TryCodeExchange {
  /** Key of the try sign-in client secrets; derived from SVC_ENCRYPTION_KEY, never sent anywhere. */
  readonly #key: Buffer;
  /** The loopback listener of try sign-in's token requests, started on first use (see redeem). */
  #internal: Promise<{ server: http.Server; base: string }> | undefined;
  /** Requests that reached the provider through that listener, never through svc's public one. */
  readonly #requests = new WeakSet<IncomingMessage>();

  constructor(
    private readonly opts: {
      encryptionKey: Buffer;
      publicUrl: URL;
      tryCallbackUrl: string;
      /** The provider's request handler now (it changes when the signing keys are reloaded). */
      callback: () => (req: IncomingMessage, res: ServerResponse) => void;
      pinToPublicUrl: (req: IncomingMessage, publicUrl: URL) => void;
    },
  ) {
    this.#key = Buffer.from(hkdfSync('sha256', opts.encryptionKey, Buffer.alloc(0), 'svc try sign-in client secret', 32));
  }

  /**
   * Redeems a code issued to the try sign-in callback at svc's own token endpoint: the real
   * oidc-provider token endpoint (PKCE, code binding, single use, client authentication), reached
   * over a loopback listener of this process instead of the public one.
   *
   * A confidential client must authenticate, and svc cannot present its secret key: it keeps only
   * the key's SHA-256. So the client authenticates with a try secret (tryClientSecret), an HMAC of
   * its client id under a key derived from SVC_ENCRYPTION_KEY. That secret is computed here, sent
   * only over this loopback connection, and accepted by compareClientSecret (in addition to the
   * real secret key, which keeps working as before) only when every one of these holds:
   * - the request arrived through this loopback listener (a request object svc's public server
   *   never handles), so the secret is worthless over svc's public URL, whoever learns it;
   * - it is the authorization_code grant of a code whose redirect_uri is the try callback, i.e. a
   *   code that only ever lands on svc itself;
   * - the secret is this client's (the HMAC binds the client id).
   * The loopback listener alone would not do: anything on the machine (or a request svc is made to
   * send, such as a webhook) can reach a loopback port, but none of them knows the secret. Other
   * mechanisms of oidc-provider were no better fit: client_secret_jwt and private_key_jwt need a
   * key the client registered, and a second registered client would be a client of its own, not
   * a sign-in to this application.
   */
  async redeem(input: {
    clientId: string;
    confidential: boolean;
    code: string;
    codeVerifier: string;
  }): Promise<{ status: number; body: Record<string, unknown> }> {
    const { base } = await this.#listener();
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code: input.code,
      redirect_uri: this.opts.tryCallbackUrl,
      code_verifier: input.codeVerifier,
    });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (input.confidential) {
      // client_secret_basic: both parts form-urlencoded (RFC 6749 section 2.3.1).
      const user = encodeURIComponent(input.clientId);
      const password = encodeURIComponent(this.trySecretOf(input.clientId));
      headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    } else {
      form.set('client_id', input.clientId);
    }
    const res = await fetch(`${base}${OIDC_ROUTES.token}`, { method: 'POST', headers, body: form.toString() });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    return { status: res.status, body };
  }

  /** A client's try sign-in secret: HMAC-SHA256 of its id under a key derived from SVC_ENCRYPTION_KEY (see redeem). */
  trySecretOf(clientId: string): string {
    return createHmac('sha256', this.#key).update(clientId, 'utf8').digest('base64url');
  }

  /** Whether `presented` is `clientId`'s try secret on a request `redeem` sent (see there). */
  isTryExchange(ctx: KoaContextWithOIDC | undefined, clientId: string, presented: string): boolean {
    if (!ctx || !this.#requests.has(ctx.req) || ctx.oidc.route !== 'token') {
      return false;
    }
    const params = ctx.oidc.params ?? {};
    if (params.grant_type !== 'authorization_code' || params.redirect_uri !== this.opts.tryCallbackUrl || typeof presented !== 'string') {
      return false;
    }
    const expected = Buffer.from(this.trySecretOf(clientId), 'utf8');
    const actual = Buffer.from(presented, 'utf8');
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  #listener(): Promise<{ server: http.Server; base: string }> {
    this.#internal ??= (async () => {
      const server = http.createServer((req, res) => {
        this.#requests.add(req);
        this.opts.pinToPublicUrl(req, this.opts.publicUrl);
        this.opts.callback()(req, res);
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      server.unref();
      return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    })();
    // A failed start is retried by the next call.
    this.#internal.catch(() => {
      this.#internal = undefined;
    });
    return this.#internal;
  }

  async close(): Promise<void> {
    const internal = await this.#internal?.catch(() => undefined);
    if (internal) {
      internal.server.closeAllConnections();
      await new Promise<void>((resolve) => internal.server.close(() => resolve()));
    }
  }
}
