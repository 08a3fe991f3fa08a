import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * An agent's side of the MCP SDK client's OAuth (its `OAuthClientProvider`), kept in memory: what
 * the SDK saves (the client's registration or metadata-document id, its tokens, the PKCE
 * verifier), and the authorization URL it would open in a browser, for the test to follow.
 * `clientMetadataUrl` makes the client identify itself by a Client ID Metadata Document; without
 * it the SDK registers at the server's registration endpoint.
 */
export function memoryAgent(opts: { redirectUrl: string; clientMetadata: OAuthClientMetadata; clientMetadataUrl?: string }): {
  provider: OAuthClientProvider;
  information: () => OAuthClientInformationMixed | undefined;
  tokens: () => OAuthTokens | undefined;
  authorizationUrl: () => URL | undefined;
} {
  let information: OAuthClientInformationMixed | undefined;
  let tokens: OAuthTokens | undefined;
  let verifier = '';
  let authorizationUrl: URL | undefined;
  const provider: OAuthClientProvider = {
    ...(opts.clientMetadataUrl !== undefined ? { clientMetadataUrl: opts.clientMetadataUrl } : {}),
    get redirectUrl() {
      return opts.redirectUrl;
    },
    get clientMetadata() {
      return opts.clientMetadata;
    },
    clientInformation: () => information,
    saveClientInformation: (info) => {
      information = info;
    },
    tokens: () => tokens,
    saveTokens: (saved) => {
      tokens = saved;
    },
    redirectToAuthorization: (url) => {
      authorizationUrl = url;
    },
    saveCodeVerifier: (saved) => {
      verifier = saved;
    },
    codeVerifier: () => verifier,
  };
  return { provider, information: () => information, tokens: () => tokens, authorizationUrl: () => authorizationUrl };
}
