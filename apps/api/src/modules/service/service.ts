import type { TServiceConfigResponse } from '@svc/contracts/public-edge';
import type { Config } from '../../env.ts';

export function describeService(config: Config): TServiceConfigResponse {
  return {
    service: 'svc',
    apiVersion: 'v1',
    publicUrl: config.publicUrl,
    docsUrl: `${config.publicUrl}/docs`,
    openapiUrl: `${config.publicUrl}/v1/openapi.json`,
    clientConfigUrl: `${config.publicUrl}/v1/client/config`,
    keyless: { enabled: config.keylessEnabled },
    engine: { kind: config.engine.kind, issuer: config.engine.issuer, name: engineName(config.engine) },
    account: {
      engine: config.engine.kind,
      recoveryUrl: `${config.publicUrl}/auth/recovery`,
      // Authentik and Keycloak have recovery built in; a generic engine needs ENGINE_RECOVERY.
      recoveryConfigured: config.engine.kind !== 'generic' || Boolean(config.engine.overrides.recovery),
      emailVerificationUrl:
        config.engine.kind !== 'generic' || config.engine.overrides.email_verification ? `${config.publicUrl}/auth/verify-email` : null,
      mfaSetupUrl: `${config.publicUrl}/auth/mfa`,
      passkeySetupUrl: `${config.publicUrl}/auth/passkeys`,
    },
  };
}

const ENGINE_NAMES: Record<Config['engine']['kind'], string> = { authentik: 'Authentik', keycloak: 'Keycloak', generic: 'generic OIDC' };

/**
 * The engine that runs, as a person reads it: svc's development engine speaks the authentik
 * preset, but calling it Authentik would send people looking for an Authentik they never set up.
 */
function engineName(engine: Config['engine']): string {
  return engine.embedded ? 'development engine' : ENGINE_NAMES[engine.kind];
}
