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
    engine: { kind: config.engine.kind, issuer: config.engine.issuer },
  };
}
