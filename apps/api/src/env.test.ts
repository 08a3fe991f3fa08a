import { parseDevEngineEnv } from '@svc/dev-engine/env';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './env.ts';

const PRODUCTION = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://svc@db.internal/svc',
  PUBLIC_URL: 'https://id.example.com',
  ENGINE_ISSUER: 'https://engine.example.com/application/o/svc/',
  SVC_ENCRYPTION_KEY: 'f'.repeat(64),
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

describe('default ports', () => {
  it('svc listens on 7150 and starts its dev engine on 7151: clear of 3000/3001 and the other framework dev ports', () => {
    const config = loadConfig({});
    expect(config.port).toBe(7150);
    expect(config.publicUrl).toBe('http://127.0.0.1:7150');
    expect(config.engine.devEnginePort).toBe(7151);
    expect(config.engine.issuer).toBe('http://127.0.0.1:7151/application/o/svc/');
  });

  it("the standalone dev engine listens on 7151 and sends users back to svc's default port", () => {
    const env = parseDevEngineEnv({});
    expect(env.DEV_ENGINE_PORT).toBe(7151);
    expect(env.DEV_ENGINE_REDIRECT_URIS).toEqual(['http://127.0.0.1:7150/auth/callback', 'http://localhost:7150/auth/callback']);
  });
});

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

describe('LOG_FORMAT', () => {
  it('is pretty in development (the default NODE_ENV) and JSON in production and tests, unless set', () => {
    expect(loadConfig({}).logFormat).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'development' }).logFormat).toBe('pretty');
    expect(loadConfig(PRODUCTION).logFormat).toBe('json');
    expect(loadConfig({ NODE_ENV: 'test' }).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadConfig({ ...PRODUCTION, LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(configError({ LOG_FORMAT: 'text' }).message).toContain('LOG_FORMAT');
  });
});

describe('SVC_ENCRYPTION_KEY', () => {
  it('is required in production, and the error says how to make one', () => {
    const { SVC_ENCRYPTION_KEY: _, ...rest } = PRODUCTION;
    expect(configError(rest).message).toMatch(/^SVC_ENCRYPTION_KEY is required when NODE_ENV=production .*openssl rand -base64 32/);
  });

  it('reads 64 hex digits or base64 of 32 bytes, and refuses any other length', () => {
    expect(loadConfig({ ...PRODUCTION, SVC_ENCRYPTION_KEY: 'ab'.repeat(32) }).encryptionKey).toEqual(Buffer.alloc(32, 0xab));
    const b64 = Buffer.alloc(32, 7).toString('base64');
    expect(loadConfig({ ...PRODUCTION, SVC_ENCRYPTION_KEY: b64 }).encryptionKey).toEqual(Buffer.alloc(32, 7));
    expect(configError({ ...PRODUCTION, SVC_ENCRYPTION_KEY: Buffer.alloc(16).toString('base64') }).message).toMatch(/must be 32 bytes/);
    expect(configError({ ...PRODUCTION, SVC_ENCRYPTION_KEY: 'abc' }).message).toMatch(/must be 32 bytes/);
  });

  it('may be unset outside production (a key is generated into DATA_DIR)', () => {
    expect(loadConfig({}).encryptionKey).toBeNull();
  });
});

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  it('defaults to immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(loadConfig({}).webhooks.retryScheduleMs).toEqual([0, 5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
  });

  it('takes ms, s, m and h, and names a bad entry', () => {
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0, 200ms,1s,1.5m,1h' }).webhooks.retryScheduleMs).toEqual([
      0, 200, 1000, 90_000, 3_600_000,
    ]);
    expect(configError({ WEBHOOK_RETRY_SCHEDULE: '0,5x' }).message).toMatch(/WEBHOOK_RETRY_SCHEDULE: "5x" is not a delay/);
    expect(configError({ WEBHOOK_RETRY_SCHEDULE: '-1' }).message).toMatch(/"-1" is not a delay/);
  });
});

describe('email settings', () => {
  it('are off by default: no provider, nothing sent', () => {
    const c = loadConfig({});
    expect(c.email.enabled).toBe(false);
    expect(c.email.provider).toBeNull();
    expect(c.email.worker).toEqual({ enabled: false, intervalMs: 30_000, batchSize: 25 });
  });

  it('EMAIL_ENABLED without a provider stays disabled (links are copied by hand)', () => {
    expect(loadConfig({ EMAIL_ENABLED: 'true' }).email.enabled).toBe(false);
  });

  it('a provider needs EMAIL_FROM and its own credentials, each named', () => {
    expect(configError({ EMAIL_ENABLED: 'true', EMAIL_PROVIDER: 'resend', RESEND_API_KEY: 're_x' }).message).toMatch(
      /EMAIL_FROM is required/,
    );
    expect(configError({ EMAIL_ENABLED: 'true', EMAIL_PROVIDER: 'resend', EMAIL_FROM: 'a@b.c' }).message).toMatch(
      /RESEND_API_KEY is required/,
    );
    expect(configError({ EMAIL_ENABLED: 'true', EMAIL_PROVIDER: 'smtp', EMAIL_FROM: 'a@b.c' }).message).toMatch(/SMTP_URL is required/);
    expect(configError({ EMAIL_ENABLED: 'true', EMAIL_PROVIDER: 'smtp', EMAIL_FROM: 'a@b.c', SMTP_URL: 'http://x' }).message).toMatch(
      /smtp:\/\/ or smtps:\/\//,
    );
    const ok = loadConfig({
      EMAIL_ENABLED: 'true',
      EMAIL_PROVIDER: 'resend',
      EMAIL_FROM: 'a@b.c',
      RESEND_API_KEY: 're_x',
      RESEND_BASE_URL: 'http://127.0.0.1:9/',
    });
    expect(ok.email).toMatchObject({ enabled: true, provider: 'resend', resendBaseUrl: 'http://127.0.0.1:9' });
  });
});

describe('billing provider settings', () => {
  it('leave every provider unconfigured by default', () => {
    expect(loadConfig({}).billing).toEqual({ stripe: null, razorpay: null, paddle: null });
  });

  it('configure each provider from its key(s), with an optional API base for its SDK', () => {
    const billing = loadConfig({
      STRIPE_SECRET_KEY: 'sk_test_abc123',
      STRIPE_API_BASE: 'http://127.0.0.1:12111',
      RAZORPAY_KEY_ID: 'rzp_live_abc',
      RAZORPAY_KEY_SECRET: 'shh-secret',
      PADDLE_API_KEY: 'pdl_sdbx_apikey_01abc_def',
    }).billing;
    expect(billing).toEqual({
      stripe: { secretKey: 'sk_test_abc123', apiBase: 'http://127.0.0.1:12111' },
      razorpay: { keyId: 'rzp_live_abc', keySecret: 'shh-secret', apiBase: null },
      paddle: { apiKey: 'pdl_sdbx_apikey_01abc_def', apiBase: null },
    });
    // Empty values are unset.
    expect(loadConfig({ STRIPE_SECRET_KEY: '', PADDLE_API_KEY: '' }).billing.stripe).toBeNull();
  });

  it('refuse a malformed key or half a Razorpay pair, naming the variable and never quoting the value', () => {
    const stripe = configError({ STRIPE_SECRET_KEY: 'pk_live_not-a-secret-key' });
    expect(stripe.message).toContain('STRIPE_SECRET_KEY');
    expect(stripe.message).toContain('sk_test_, sk_live_, rk_test_ or rk_live_');
    expect(stripe.message).not.toContain('pk_live_not-a-secret-key');
    const spaced = configError({ PADDLE_API_KEY: 'two words-secret' });
    expect(spaced.message).toContain('PADDLE_API_KEY');
    expect(spaced.message).not.toContain('words-secret');
    expect(configError({ RAZORPAY_KEY_ID: 'rzp_test_abc' }).message).toContain('RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET are set together');
    expect(configError({ RAZORPAY_KEY_SECRET: 'lonely-secret' }).message).not.toContain('lonely-secret');
    expect(configError({ RAZORPAY_KEY_ID: 'key_abc', RAZORPAY_KEY_SECRET: 'x' }).message).toContain('rzp_test_ or rzp_live_');
  });

  it('take an http(s) API base without credentials, query or fragment', () => {
    expect(configError({ STRIPE_API_BASE: 'ftp://127.0.0.1' }).message).toContain('STRIPE_API_BASE');
    expect(configError({ PADDLE_API_BASE: 'http://user:pw@127.0.0.1:1' }).message).toContain('PADDLE_API_BASE: must not carry credentials');
    expect(configError({ RAZORPAY_API_BASE: 'http://127.0.0.1:1/?x=1' }).message).toContain('RAZORPAY_API_BASE');
  });
});

describe('SUBSCRIPTION_UPGRADE_URL', () => {
  it('is null when unset; keeps an http(s) URL with its {organizationId} placeholder', () => {
    expect(loadConfig({}).subscriptionUpgradeUrl).toBeNull();
    const url = 'https://billing.example.com/orgs/{organizationId}/plan?from=svc';
    expect(loadConfig({ SUBSCRIPTION_UPGRADE_URL: url }).subscriptionUpgradeUrl).toBe(url);
  });

  it('refuses what is not an http(s) URL, naming the variable', () => {
    for (const value of ['billing', 'javascript:alert(1)', 'ftp://billing.example.com/']) {
      expect(configError({ SUBSCRIPTION_UPGRADE_URL: value }).message).toContain('SUBSCRIPTION_UPGRADE_URL');
    }
  });
});

describe('EVENTS_RETENTION_DAYS', () => {
  it('defaults to 30 days and takes whole days from 1 to 3650', () => {
    expect(loadConfig({}).eventsRetentionMs).toBe(30 * 86_400_000);
    expect(loadConfig({ EVENTS_RETENTION_DAYS: '7' }).eventsRetentionMs).toBe(7 * 86_400_000);
    expect(loadConfig({ EVENTS_RETENTION_DAYS: '3650' }).eventsRetentionMs).toBe(3650 * 86_400_000);
  });

  it('rejects anything else', () => {
    for (const value of ['0', '-1', '1.5', 'month', '3651']) {
      expect(configError({ EVENTS_RETENTION_DAYS: value }).message).toContain('EVENTS_RETENTION_DAYS');
    }
  });
});

describe('USAGE_RETENTION_DAYS and AUDIT_RETENTION_DAYS', () => {
  it('keep everything when unset; the events feed window is the events retention', () => {
    expect(loadConfig({}).retention).toEqual({ eventsDays: 30, usageDays: null, auditDays: null });
    expect(loadConfig({ USAGE_RETENTION_DAYS: '400', AUDIT_RETENTION_DAYS: '2555', EVENTS_RETENTION_DAYS: '7' }).retention).toEqual({
      eventsDays: 7,
      usageDays: 400,
      auditDays: 2555,
    });
  });

  it('rejects anything but whole days', () => {
    for (const name of ['USAGE_RETENTION_DAYS', 'AUDIT_RETENTION_DAYS']) {
      for (const value of ['0', '-1', '1.5', 'year']) {
        expect(configError({ [name]: value }).message).toContain(name);
      }
    }
  });
});
