import type { TBackendApplicationResponse } from '@svc/contracts/public-edge';
import type { ApplicationWithOrganization } from '@svc/db/queries/applications';

/** The backend view: identifies the key by its display prefix, never by the secret. */
export function describeBackendApplication({ application, organization }: ApplicationWithOrganization): TBackendApplicationResponse {
  return {
    ok: true,
    application: {
      id: application.id,
      slug: application.slug,
      name: application.name,
      logoUrl: application.logoUrl,
      status: application.status,
      secretKeyPrefix: application.secretKeyPrefix,
    },
    organization: { slug: organization.slug, name: organization.name },
    checkedAt: new Date().toISOString(),
  };
}
