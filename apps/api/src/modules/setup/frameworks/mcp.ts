import { type FrameworkSpec, ISSUER_NOTE, permissionComment, permissionLiteral, pub, type WiringValues } from './shared.ts';

/**
 * An MCP server protected by svc (docs/resource-server.md): the MCP TypeScript SDK's server over
 * streamable HTTP, its Protected Resource Metadata (RFC 9728), svc's access tokens verified with
 * jose (issuer, JWKS, aud = the server's canonical URI, typ at+jwt) and the permission its tool
 * needs checked in `scope`; 401 with the resource_metadata challenge, which sends an MCP client to
 * svc (consent), and 403 insufficient_scope. This is no OIDC client: it signs nobody in.
 */
const server = (v: WiringValues) => `// An MCP server protected by svc: svc is its authorization server. An MCP client (an agent)
// that calls it without a token gets 401 with the URL of this server's Protected Resource
// Metadata (RFC 9728), finds svc there, asks the person's consent on svc and comes back with an
// access token for this server (aud = MCP_RESOURCE, scope = the permissions the person allowed).
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const issuer = process.env.SVC_ISSUER;
// This server's canonical URI, exactly as registered in svc as an API resource: tokens for it carry it as aud.
const resource = process.env.MCP_RESOURCE;

${permissionComment(v, '//')}
const REQUIRED_PERMISSION = ${permissionLiteral(v)};

// Development allowance: plain http only for an svc on this machine, never in production.
const issuerUrl = new URL(issuer);
if (issuerUrl.protocol !== 'https:' && !['localhost', '127.0.0.1', '[::1]'].includes(issuerUrl.hostname)) {
  throw new Error('SVC_ISSUER must be https:// (http is allowed only for an svc on localhost)');
}

// svc's authorization server metadata (RFC 8414) names its signing keys.
const metadata = await (await fetch(\`\${issuer.replace(/\\/+$/, '')}/.well-known/oauth-authorization-server\`)).json();
if (metadata.issuer !== issuer) {
  throw new Error(\`svc's metadata names issuer \${metadata.issuer}, expected \${issuer}\`);
}
const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));

// RFC 9728 section 3.1: the metadata of a resource at /mcp is at /.well-known/oauth-protected-resource/mcp.
const resourceUrl = new URL(resource);
const metadataPath = \`/.well-known/oauth-protected-resource\${resourceUrl.pathname === '/' ? '' : resourceUrl.pathname}\`;
const metadataUrl = \`\${resourceUrl.origin}\${metadataPath}\`;

const json = (res, status, body, headers = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

/** A refusal as OAuth clients expect it (RFC 6750, RFC 9728): the challenge names the metadata. */
function refuse(res, status, error, description, extra = '') {
  const challenge = \`Bearer resource_metadata="\${metadataUrl}"\${error ? \`, error="\${error}", error_description="\${description}"\` : ''}\${extra}\`;
  return json(res, status, { error: error ?? 'invalid_request', error_description: description }, { 'www-authenticate': challenge });
}

/** The MCP server of one request, acting for the token's caller. */
function mcpServerFor(claims) {
  const mcp = new McpServer({ name: 'svc-protected-mcp', version: '1.0.0' });
  mcp.registerTool('whoami', { description: 'Who this agent acts for, as svc says in its token' }, async () => ({
    content: [
      {
        type: 'text',
        text: JSON.stringify({
          sub: claims.sub,
          org_id: claims.org_id,
          org_slug: claims.org_slug,
          client_id: claims.client_id,
          permissions: String(claims.scope ?? '').split(' ').filter(Boolean),
        }),
      },
    ],
  }));
  return mcp;
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, resourceUrl);
  try {
    if (req.method === 'GET' && url.pathname === metadataPath) {
      // Protected Resource Metadata (RFC 9728): svc issues the tokens; these are the permissions it knows.
      return json(res, 200, {
        resource,
        authorization_servers: [issuer],
        scopes_supported: [REQUIRED_PERMISSION],
        bearer_methods_supported: ['header'],
      });
    }
    if (url.pathname !== resourceUrl.pathname) {
      return json(res, 404, { error: 'not_found' });
    }
    const token = /^Bearer ([\\w.~+/-]+=*)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) {
      return refuse(res, 401, undefined, 'an access token from svc is required');
    }
    let claims;
    try {
      // svc's signature, svc as issuer, this server as audience (RFC 8707), an access token (RFC 9068), not expired.
      ({ payload: claims } = await jwtVerify(token, jwks, { issuer, audience: resource, typ: 'at+jwt', clockTolerance: 5 }));
    } catch {
      return refuse(res, 401, 'invalid_token', 'the access token is not valid for this server');
    }
    if (!String(claims.scope ?? '').split(' ').includes(REQUIRED_PERMISSION)) {
      return refuse(res, 403, 'insufficient_scope', \`this server needs \${REQUIRED_PERMISSION}\`, \`, scope="\${REQUIRED_PERMISSION}"\`);
    }
    // Stateless streamable HTTP: a server and a transport per request, JSON answers.
    const mcp = mcpServerFor(claims);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      transport.close();
      mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  } catch (error) {
    if (!res.headersSent) {
      json(res, 500, { error: 'server_error', error_description: error.message });
    }
  }
});

const port = Number(process.env.PORT ?? 3000);
server.listen(port, () => console.log(\`MCP server on \${resource}\`));
`;

export const mcp: FrameworkSpec & { id: 'mcp' } = {
  id: 'mcp',
  kind: 'mcp_server',
  name: 'MCP server (TypeScript SDK)',
  language: 'JavaScript (Node.js 20.6 or later)',
  oidcLibrary: { name: '@modelcontextprotocol/sdk and jose', url: 'https://github.com/modelcontextprotocol/typescript-sdk' },
  installCommand: 'npm install @modelcontextprotocol/sdk@1 jose@6 zod@4',
  envFile: '.env',
  envLoading: 'Node reads it itself: the server starts with node --env-file=.env.',
  envVars: [
    pub('SVC_ISSUER', 'issuer', 'server', ISSUER_NOTE),
    pub(
      'MCP_RESOURCE',
      'resourceUrl',
      'server',
      "This MCP server's canonical URI (its endpoint's URL, exactly): registered in svc as an API resource; tokens for this server carry it as aud.",
    ),
    pub('PORT', 'devPort', 'server', 'Port the server listens on: the port of MCP_RESOURCE.'),
  ],
  // The MCP TypeScript SDK's streamable HTTP examples listen on 3000.
  devOrigin: 'http://localhost:3000',
  meRoute: null,
  callbackPath: '/mcp',
  postLogoutPath: '/',
  files: (v) => [{ path: 'server.mjs', language: 'js', content: server(v) }],
  runCommand: 'node --env-file=.env server.mjs',
  notes: (v) => [
    `Without a token the server answers 401 with WWW-Authenticate: Bearer resource_metadata="${metadataUrlOf(v.resourceUrl)}": curl -si -X POST ${v.resourceUrl} shows it, and curl -s ${metadataUrlOf(v.resourceUrl)} shows svc (${v.issuer}) as its authorization server.`,
    `Connect an MCP client (an agent, the MCP Inspector) to ${v.resourceUrl}: it follows that metadata to svc, identifies itself (a Client ID Metadata Document, or dynamic client registration where svc offers it), the person signs in on svc and allows it on the consent page, and the client calls the whoami tool with a token whose aud is ${v.resourceUrl} and whose scope holds the permissions the person allowed.`,
  ],
};

/** Where a resource's Protected Resource Metadata is (RFC 9728 section 3.1). */
export function metadataUrlOf(resource: string): string {
  const url = new URL(resource);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`;
}
