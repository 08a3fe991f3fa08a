import type { Db } from '@svc/db/client';
import { type CreatedApplication, createApplication } from '../../apps/api/src/modules/applications/service.ts';

let counter = 0;

/** An application (and its organization) with fresh keys; the raw secret is returned once. */
export async function seedApplication(
  db: Db,
  opts: {
    org?: string;
    name?: string;
    logoUrl?: string | null;
    status?: 'active' | 'disabled';
    redirectUrls?: string[];
    allowedOrigins?: string[];
    postLogoutRedirectUrls?: string[];
    backchannelLogoutUrl?: string | null;
    clientType?: 'confidential' | 'public';
    signInAudience?: 'anyone' | 'members';
  } = {},
): Promise<CreatedApplication> {
  counter++;
  return createApplication(db, {
    organizationSlug: opts.org ?? `org-${counter}-${Math.random().toString(36).slice(2, 8)}`,
    name: opts.name ?? `App ${counter}`,
    logoUrl: opts.logoUrl,
    status: opts.status,
    redirectUrls: opts.redirectUrls,
    allowedOrigins: opts.allowedOrigins,
    postLogoutRedirectUrls: opts.postLogoutRedirectUrls,
    backchannelLogoutUrl: opts.backchannelLogoutUrl,
    clientType: opts.clientType,
    signInAudience: opts.signInAudience,
  });
}
