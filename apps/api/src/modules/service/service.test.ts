import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../env.ts';
import { describeService } from './service.ts';

describe('describeService: the engine that runs, by name', () => {
  it.each([
    [{}, 'authentik', 'development engine'],
    [{ ENGINE_ISSUER: 'https://auth.example.com/application/o/svc/' }, 'authentik', 'Authentik'],
    [{ ENGINE_ISSUER: 'https://kc.example.com/realms/svc', ENGINE_KIND: 'keycloak' }, 'keycloak', 'Keycloak'],
    [{ ENGINE_ISSUER: 'https://id.example.com', ENGINE_KIND: 'generic' }, 'generic', 'generic OIDC'],
  ] as const)('%o: preset %s, named %s', (env, kind, name) => {
    const engine = describeService(loadConfig({ NODE_ENV: 'test', ...env })).engine;
    expect(engine).toMatchObject({ kind, name });
  });
});
