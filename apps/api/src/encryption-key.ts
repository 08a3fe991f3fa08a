import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './env.ts';
import { ConfigError } from './env.ts';

/**
 * SVC_ENCRYPTION_KEY, or (outside production, when it is unset) the key generated once into
 * DATA_DIR/encryption.key with mode 0600, so development restarts keep reading their own
 * webhook secrets. Production refuses to start without the setting (env.ts).
 */
export function resolveEncryptionKey(config: Config): Buffer {
  if (config.encryptionKey) {
    return config.encryptionKey;
  }
  if (config.nodeEnv === 'production') {
    throw new ConfigError('SVC_ENCRYPTION_KEY is required when NODE_ENV=production');
  }
  const file = path.join(config.dataDir, 'encryption.key');
  mkdirSync(config.dataDir, { recursive: true });
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw error;
    }
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) {
    throw new ConfigError(`${file} does not hold a 32-byte base64 key; delete it to generate a new one, or set SVC_ENCRYPTION_KEY`);
  }
  return key;
}
