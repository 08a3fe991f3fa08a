/** The secret box context of a connection's OIDC client secret: a sealed value opens only for its own row. */
export const oidcSecretContext = (connectionId: string): string => `sso-connection:${connectionId}:client-secret`;
