import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { PUBLISHABLE_KEY_PATTERN, SECRET_KEY_PATTERN } from '@svc/contracts/keys';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';
import type { AppServices } from '../../context.ts';
import { parseBearer, sha256Hex } from './keys.ts';
import { getOrCreateKeylessApplication } from './service.ts';

/**
 * Resolution of the credentials the public and backend routes take. Transport-free: the
 * procedures and the rate limiter both call these.
 */

export type ResolvedApplication = { found: ApplicationWithOrganization; keyless: boolean };

function single(value: unknown, what: string): string | undefined {
  if (value === undefined || value === '') {
    return undefined;
  }
  if (typeof value !== 'string') {
    throw new AppError('invalid_publishable_key', `${what} was given more than once`);
  }
  return value;
}

/**
 * The publishable key from the X-SVC-Publishable-Key header or the publishable_key query
 * parameter (they must agree), or the keyless development application for keyless=1.
 */
export async function resolvePublishableKey(
  services: AppServices,
  input: { header: string | string[] | undefined; query: unknown; keyless: string | undefined },
): Promise<ResolvedApplication> {
  const header = single(input.header, 'the X-SVC-Publishable-Key header');
  const query = single(input.query, 'publishable_key');
  const keyless = input.keyless === '1' || input.keyless === 'true';
  if (keyless) {
    if (header || query) {
      throw new AppError('invalid_publishable_key', 'send either a publishable key or keyless=1, not both');
    }
    if (!services.config.keylessEnabled) {
      throw new AppError('keyless_disabled', 'keyless development is disabled on this installation; use a publishable key');
    }
    const found = await services.applications.keyless(() => getOrCreateKeylessApplication(services.db));
    if (!found) {
      throw new Error('keyless application unavailable');
    }
    return { found, keyless: true };
  }
  if (header && query && header !== query) {
    throw new AppError('invalid_publishable_key', 'the X-SVC-Publishable-Key header and publishable_key disagree');
  }
  const key = header ?? query;
  if (!key) {
    throw new AppError(
      'invalid_publishable_key',
      'a publishable key is required: send X-SVC-Publishable-Key, publishable_key, or keyless=1',
    );
  }
  if (!PUBLISHABLE_KEY_PATTERN.test(key)) {
    throw new AppError('invalid_publishable_key', 'the publishable key is malformed (expected pk_live_ and 24 letters or digits)');
  }
  const found = await services.applications.byPublishableKey(key);
  if (!found) {
    throw new AppError('application_not_found', 'no application has this publishable key');
  }
  if (found.application.status === 'disabled') {
    throw new AppError('application_disabled', 'this application is disabled');
  }
  return { found, keyless: found.application.isKeyless };
}

/** The application whose secret key is in `Authorization: Bearer sk_live_...`. */
export async function resolveSecretKey(services: AppServices, authorization: string | undefined): Promise<ApplicationWithOrganization> {
  if (!authorization) {
    throw new AppError('invalid_secret_key', 'send the secret key as Authorization: Bearer sk_live_...');
  }
  const token = parseBearer(authorization);
  if (!token || !SECRET_KEY_PATTERN.test(token)) {
    throw new AppError('invalid_secret_key', 'the secret key is malformed (expected Authorization: Bearer sk_live_...)');
  }
  const found = await services.applications.bySecretKeyHash(sha256Hex(token));
  if (!found) {
    throw new AppError('invalid_secret_key', 'the secret key is unknown or has been rotated');
  }
  if (found.application.status === 'disabled') {
    throw new AppError('application_disabled', 'this application is disabled');
  }
  return found;
}

/** Resolution from the request as sent (before input validation), shared by every path. */
export function resolvePublishableKeyFromRequest(
  services: AppServices,
  headers: IncomingHttpHeaders,
  raw: { publishable_key?: unknown; keyless?: unknown },
): Promise<ResolvedApplication> {
  return resolvePublishableKey(services, {
    header: headers['x-svc-publishable-key'],
    query: raw.publishable_key,
    keyless: single(raw.keyless, 'keyless'),
  });
}
