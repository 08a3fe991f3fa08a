import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './env.ts';

const PRODUCTION = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://svc@db.internal/svc',
  PUBLIC_URL: 'https://id.example.com',
  ENGINE_ISSUER: 'https://engine.example.com/application/o/svc/',
};

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe('TRUST_PROXY', () => {
  it('accepts off, a hop count and proxy-addr lists', () => {
    expect(loadConfig({}).trustProxy).toBeUndefined();
    for (const value of ['', 'false', '1', '2', 'loopback', '10.0.0.0/8', 'loopback, 10.0.0.0/8,192.168.1.7', '::1', 'uniquelocal']) {
      expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toBe(value);
      expect(loadConfig({ ...PRODUCTION, TRUST_PROXY: value }).trustProxy).toBe(value);
    }
  });

  it('an invalid value is a ConfigError naming TRUST_PROXY, not a crash on the first request', () => {
    for (const value of ['foo', '10.0.0.0/33', '10.0.0.0/8,', 'yes please', '1.2.3']) {
      const error = configError({ TRUST_PROXY: value });
      expect(error.message).toContain(`TRUST_PROXY=${value}`);
      expect(error.message).toMatch(/hop count/);
      expect(error.message).not.toContain('\n');
    }
  });

  it('true (every hop trusted, so the client picks its IP) is refused in production, with what to use instead', () => {
    const error = configError({ ...PRODUCTION, TRUST_PROXY: 'true' });
    expect(error.message).toMatch(/^TRUST_PROXY=true is refused when NODE_ENV=production/);
    expect(error.message).toMatch(/hop count such as 1/);
    expect(error.message).toMatch(/subnets/);
  });

  it('true is accepted outside production (server.ts warns about it at startup)', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe('true');
    expect(loadConfig({ NODE_ENV: 'test', TRUST_PROXY: 'true' }).trustProxy).toBe('true');
  });
});

describe('SHUTDOWN_TIMEOUT_MS', () => {
  it('defaults to 10 s and takes a whole number of milliseconds', () => {
    expect(loadConfig({}).shutdownTimeoutMs).toBe(10_000);
    expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: '2500' }).shutdownTimeoutMs).toBe(2500);
    expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: '0' }).shutdownTimeoutMs).toBe(0);
  });

  it('rejects a value that is not a non-negative integer', () => {
    for (const value of ['soon', '-1', '1.5']) {
      expect(configError({ SHUTDOWN_TIMEOUT_MS: value }).message).toContain('SHUTDOWN_TIMEOUT_MS');
    }
  });
});
