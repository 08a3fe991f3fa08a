import { newId } from '@svc/contracts/ids';
import type { Permission } from '@svc/contracts/permissions';
import type { Db } from '@svc/db/client';
import { insertOrganization, type OrganizationRow } from '@svc/db/queries/organizations';
import { apiKeys } from '@svc/db/schema/api-keys';
import { memberships } from '@svc/db/schema/identity';
import { newSecretKey } from '../../apps/api/src/modules/applications/keys.ts';
import { signInFromEngine } from '../../apps/api/src/modules/identity/service.ts';
import { createSession } from '../../apps/api/src/modules/session-store/service.ts';

let counter = 0;
const unique = () => `${++counter}-${Math.random().toString(36).slice(2, 8)}`;

const SESSION = { idleMs: 24 * 3_600_000, absoluteMs: 7 * 24 * 3_600_000 };

/** A fresh tenant organization nobody belongs to yet. */
export async function seedOrganization(db: Db, opts: { name?: string; slug?: string } = {}): Promise<OrganizationRow> {
  const id = unique();
  const row = await insertOrganization(db, { id: newId('organization'), slug: opts.slug ?? `org-${id}`, name: opts.name ?? `Org ${id}` });
  if (!row) {
    throw new Error('organization slug taken');
  }
  return row;
}

export type SignedIn = {
  user: { id: string; email: string; name: string };
  /** The organization the session is in (the one passed, else the user's own workspace). */
  organization: Pick<OrganizationRow, 'id' | 'slug' | 'name' | 'kind'>;
  /** The user's own workspace, created at first sign-in. */
  ownWorkspace: Pick<OrganizationRow, 'id' | 'slug' | 'name' | 'kind'>;
  token: string;
  /** `cookie` header value for requests as this user (http PUBLIC_URL: `svc_session`). */
  cookie: string;
  sessionId: string;
};

/**
 * A user signed in the way the OIDC callback does it (their own workspace created), then, when
 * `organization` is given, a member of it with `roleKey` and a session active there.
 */
export async function seedSignedIn(
  db: Db,
  opts: { organization?: OrganizationRow; roleKey?: string; platformAdmin?: boolean; email?: string; name?: string } = {},
): Promise<SignedIn> {
  const id = unique();
  const email = opts.email ?? `user-${id}@example.com`;
  const outcome = await signInFromEngine(
    db,
    {
      subject: `sub-${id}`,
      email,
      emailVerified: true,
      name: opts.name ?? `User ${id}`,
      groups: opts.platformAdmin ? ['platform-admins'] : [],
    },
    { platformAdminGroup: 'platform-admins' },
  );
  const organization = opts.organization ?? outcome.workspace;
  if (opts.organization) {
    await db.insert(memberships).values({ tenantId: opts.organization.id, userId: outcome.user.id, roleKey: opts.roleKey ?? 'org_member' });
  }
  const { token, session } = await createSession(db, SESSION, {
    userId: outcome.user.id,
    activeTenantId: organization.id,
    isPlatformAdmin: outcome.isPlatformAdmin,
  });
  return {
    user: { id: outcome.user.id, email: outcome.user.email, name: outcome.user.name },
    organization,
    ownWorkspace: outcome.workspace,
    token,
    cookie: `svc_session=${token}`,
    sessionId: session.id,
  };
}

const keyCreators = new WeakMap<Db, Promise<string>>();

/**
 * Who seeded keys are created by unless a test says: one platform admin per database, who counts
 * as an org admin everywhere and belongs to no tenant (so no tenant's member list changes).
 */
function defaultKeyCreator(db: Db): Promise<string> {
  let creator = keyCreators.get(db);
  if (!creator) {
    const id = unique();
    creator = signInFromEngine(
      db,
      {
        subject: `sub-keys-${id}`,
        email: `key-creator-${id}@example.com`,
        emailVerified: true,
        name: 'Key creator',
        groups: ['platform-admins'],
      },
      { platformAdminGroup: 'platform-admins' },
    ).then((outcome) => outcome.user.id);
    keyCreators.set(db, creator);
  }
  return creator;
}

/**
 * A tenant API key with `scopes`; the raw secret is returned once, as the API does. A key can do
 * no more than its creator: `createdBy` (a user id, or null for a creator since deleted), by
 * default a platform admin.
 */
export async function seedApiKey(
  db: Db,
  opts: {
    tenantId: string;
    scopes: Permission[];
    name?: string;
    expiresAt?: Date;
    revoked?: boolean;
    createdBy?: string | null;
  },
): Promise<{ id: string; secretKey: string; authorization: string }> {
  const createdByUserId = opts.createdBy === undefined ? await defaultKeyCreator(db) : opts.createdBy;
  const { secretKey, secretKeyHash, secretKeyPrefix } = newSecretKey();
  const id = newId('apiKey');
  await db.insert(apiKeys).values({
    id,
    tenantId: opts.tenantId,
    name: opts.name ?? `Key ${unique()}`,
    scopes: [...opts.scopes].sort(),
    secretHash: secretKeyHash,
    secretPrefix: secretKeyPrefix,
    createdByUserId,
    expiresAt: opts.expiresAt,
    revokedAt: opts.revoked ? new Date() : undefined,
  });
  return { id, secretKey, authorization: `Bearer ${secretKey}` };
}
