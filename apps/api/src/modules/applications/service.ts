import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import type { Db, DbOrTx } from '@svc/db/client';
import {
  type ApplicationRow,
  type ApplicationWithOrganization,
  findApplicationsByIdOrSlug,
  findKeylessApplication,
  insertApplication,
  setApplicationSecret,
  setApplicationStatus,
} from '@svc/db/queries/applications';
import { ensureOrganization, type OrganizationRow } from '@svc/db/queries/organizations';
import { newPublishableKey, newSecretKey } from './keys.ts';

const KEYLESS_ORGANIZATION_SLUG = 'keyless-development';

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$/;

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/g, '');
  return slug || 'app';
}

export type CreatedApplication = {
  application: ApplicationRow;
  organization: OrganizationRow;
  publishableKey: string;
  /** Raw secret: returned this once, never stored. */
  secretKey: string;
};

/**
 * Creates an application (and its organization when missing). The slug is the name's slug,
 * suffixed -2, -3, ... when the organization already has it.
 */
export async function createApplication(
  db: Db,
  input: {
    organizationSlug: string;
    organizationName?: string;
    name: string;
    status?: ApplicationRow['status'];
    redirectUrls?: string[];
    allowedOrigins?: string[];
  },
): Promise<CreatedApplication> {
  if (!SLUG_PATTERN.test(input.organizationSlug)) {
    throw new AppError('validation_failed', 'organization slug must be 1-48 of a-z, 0-9 and inner dashes');
  }
  if (input.organizationSlug === KEYLESS_ORGANIZATION_SLUG) {
    // The keyless workspace is public (anyone may read its config): no customer app belongs there.
    throw new AppError('validation_failed', `organization slug ${KEYLESS_ORGANIZATION_SLUG} is reserved`);
  }
  const name = input.name.trim();
  if (name.length === 0 || name.length > 100) {
    throw new AppError('validation_failed', 'application name must be 1-100 characters');
  }
  return db.transaction(async (tx) => {
    const organization = await ensureOrganization(tx, {
      id: newId('organization'),
      slug: input.organizationSlug,
      name: input.organizationName ?? input.organizationSlug,
    });
    const base = slugify(name);
    for (let attempt = 1; attempt <= 50; attempt++) {
      const slug = attempt === 1 ? base : `${base.slice(0, 44)}-${attempt}`;
      const publishableKey = newPublishableKey();
      const secret = newSecretKey();
      const id = newId('application');
      const inserted = await insertApplication(tx, {
        id,
        tenantId: organization.id,
        slug,
        name,
        status: input.status ?? 'active',
        publishableKey,
        secretKeyHash: secret.secretKeyHash,
        secretKeyPrefix: secret.secretKeyPrefix,
        redirectUrls: input.redirectUrls ?? [],
        allowedOrigins: input.allowedOrigins ?? [],
      });
      if (inserted) {
        const rows = await findApplicationsByIdOrSlug(tx, { idOrSlug: id });
        const row = rows[0];
        if (!row) {
          throw new Error('inserted application not found');
        }
        return { application: row.application, organization, publishableKey, secretKey: secret.secretKey };
      }
    }
    throw new AppError('conflict', `could not find a free slug for ${name}`);
  });
}

/** Resolves an operator's `<id-or-slug>` to exactly one application, or explains why not. */
export async function resolveApplication(db: DbOrTx, idOrSlug: string, organizationSlug?: string): Promise<ApplicationWithOrganization> {
  const rows = await findApplicationsByIdOrSlug(db, { idOrSlug, organizationSlug });
  const exact = rows.find((r) => r.application.id === idOrSlug);
  if (exact) {
    return exact;
  }
  if (rows.length === 0) {
    throw new AppError('application_not_found', `no application ${idOrSlug}`);
  }
  if (rows.length > 1) {
    const orgs = rows.map((r) => r.organization.slug).join(', ');
    throw new AppError('conflict', `slug ${idOrSlug} exists in several organizations (${orgs}); pass --org or the id`);
  }
  return rows[0] as ApplicationWithOrganization;
}

export async function changeApplicationStatus(
  db: Db,
  target: ApplicationWithOrganization,
  status: ApplicationRow['status'],
): Promise<ApplicationRow> {
  const row = await setApplicationStatus(db, { tenantId: target.organization.id, id: target.application.id, status });
  if (!row) {
    throw new AppError('application_not_found', `no application ${target.application.id}`);
  }
  return row;
}

/** Replaces the secret key; the old one stops working at once (row update + NOTIFY). */
export async function rotateApplicationSecret(
  db: Db,
  target: ApplicationWithOrganization,
): Promise<{ application: ApplicationRow; secretKey: string }> {
  const secret = newSecretKey();
  const row = await setApplicationSecret(db, {
    tenantId: target.organization.id,
    id: target.application.id,
    secretKeyHash: secret.secretKeyHash,
    secretKeyPrefix: secret.secretKeyPrefix,
  });
  if (!row) {
    throw new AppError('application_not_found', `no application ${target.application.id}`);
  }
  return { application: row, secretKey: secret.secretKey };
}

/**
 * The shared keyless-development application, created on first use. Concurrent first uses (any
 * number of processes) converge on one row: a partial unique index allows one keyless app.
 */
export async function getOrCreateKeylessApplication(db: Db): Promise<ApplicationWithOrganization> {
  const existing = await findKeylessApplication(db);
  if (existing) {
    return existing;
  }
  await db.transaction(async (tx) => {
    const organization = await ensureOrganization(tx, {
      id: newId('organization'),
      slug: KEYLESS_ORGANIZATION_SLUG,
      name: 'Keyless development',
      kind: 'keyless',
    });
    // Nobody ever learns this secret: the keyless app serves client config only.
    const secret = newSecretKey();
    await insertApplication(tx, {
      id: newId('application'),
      tenantId: organization.id,
      slug: 'keyless-development',
      name: 'Keyless development app',
      publishableKey: newPublishableKey(),
      secretKeyHash: secret.secretKeyHash,
      secretKeyPrefix: secret.secretKeyPrefix,
      isKeyless: true,
    });
  });
  const created = await findKeylessApplication(db);
  if (!created) {
    throw new Error('keyless application missing after creation');
  }
  return created;
}
