import { eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { thirdPartyAccess } from '../schema/connected-apps.ts';

export type ThirdPartyAccessRow = typeof thirdPartyAccess.$inferSelect;

// Which third-party apps and agents may connect to an organization (docs/oidc.md "Which third
// parties an organization allows"). Every statement carries the tenant predicate.

/** The organization's choice, or undefined when it never chose (the default applies). */
export async function findThirdPartyAccess(db: DbOrTx, opts: { tenantId: string }): Promise<ThirdPartyAccessRow | undefined> {
  const [row] = await db.select().from(thirdPartyAccess).where(eq(thirdPartyAccess.tenantId, opts.tenantId)).limit(1);
  return row;
}

/** Records the organization's choice (replacing an earlier one); answers it as stored. */
export async function setThirdPartyAccess(
  db: DbOrTx,
  opts: { tenantId: string; mode: ThirdPartyAccessRow['mode']; clients: string[] },
): Promise<ThirdPartyAccessRow> {
  const [row] = await db
    .insert(thirdPartyAccess)
    .values({ tenantId: opts.tenantId, mode: opts.mode, clients: opts.clients })
    .onConflictDoUpdate({
      target: thirdPartyAccess.tenantId,
      set: { mode: opts.mode, clients: opts.clients, updatedAt: new Date() },
    })
    .returning();
  if (!row) {
    throw new Error('third_party_access upsert returned nothing');
  }
  return row;
}

/** A grant a person gave a third-party client for the organization (an oidc-provider `Grant` artifact). */
export type ThirdPartyGrantRow = {
  grantId: string;
  clientId: string;
  userId: string;
  email: string | null;
  /** The OpenID scopes granted (`openid email offline_access ...`). */
  scope: string;
  /** Per API resource (its identifier), the permissions granted. */
  resources: Record<string, string>;
  grantedAt: Date;
  expiresAt: Date | null;
  /** When a token was last issued under it or used on svc's MCP server (to the minute); null: never since. */
  lastUsedAt: Date | null;
};

/**
 * The grants people of the organization gave third-party clients (client ids are https URLs),
 * newest first, live ones only. The organization is the one the grant speaks for (its payload).
 */
export async function listThirdPartyGrants(db: DbOrTx, opts: { tenantId: string; limit: number }): Promise<ThirdPartyGrantRow[]> {
  const rows = (await db.execute(sql`
    select p.id as "grantId", p.payload->>'clientId' as "clientId", p.payload->>'accountId' as "userId", u.email,
           coalesce(p.payload->'openid'->>'scope', '') as scope, coalesce(p.payload->'resources', '{}'::jsonb) as resources,
           to_timestamp((p.payload->>'iat')::float8) as "grantedAt", p.expires_at as "expiresAt",
           p.last_used_at as "lastUsedAt"
      from oidc_payloads p
      left join users u on u.id = p.payload->>'accountId'
     where p.model = 'Grant'
       and p.payload->'organization'->>'id' = ${opts.tenantId}
       and p.payload->>'clientId' like 'https://%'
       and (p.expires_at is null or p.expires_at > now())
     order by (p.payload->>'iat')::float8 desc, p.id desc
     limit ${opts.limit}`)) as unknown as ThirdPartyGrantRow[];
  return rows.map((r) => ({
    ...r,
    grantedAt: new Date(r.grantedAt),
    expiresAt: r.expiresAt ? new Date(r.expiresAt) : null,
    lastUsedAt: r.lastUsedAt ? new Date(r.lastUsedAt) : null,
  }));
}

/**
 * Ends one such grant and everything issued under it (codes, refresh tokens): only a grant of the
 * organization given to a third-party client. Answers what it ended, or undefined when there was
 * no such grant (another organization's grant id included).
 */
export async function revokeThirdPartyGrant(
  db: DbOrTx,
  opts: { tenantId: string; grantId: string },
): Promise<{ clientId: string; userId: string } | undefined> {
  const [grant] = (await db.execute(sql`
    select payload->>'clientId' as "clientId", payload->>'accountId' as "userId" from oidc_payloads
     where model = 'Grant' and id = ${opts.grantId}
       and payload->'organization'->>'id' = ${opts.tenantId}
       and payload->>'clientId' like 'https://%'
     for update`)) as unknown as { clientId: string; userId: string }[];
  if (!grant) {
    return undefined;
  }
  await db.execute(sql`
    delete from oidc_payloads where grant_id = ${opts.grantId} or (model = 'Grant' and id = ${opts.grantId})`);
  return grant;
}

/**
 * Records that a grant was used now, unless it was within `resolutionMs` already (so the row is
 * written about once a minute however often the grant is used, by however many processes).
 */
export async function noteThirdPartyGrantUsed(
  db: DbOrTx,
  opts: { grantId: string; resolutionMs: number; registeredClientId?: string | undefined },
): Promise<void> {
  await db.execute(sql`
    update oidc_payloads set last_used_at = now()
     where ((model = 'Grant' and id = ${opts.grantId}) or (model = 'Client' and id = ${opts.registeredClientId ?? null}))
       and (last_used_at is null or last_used_at < now() - make_interval(secs => ${opts.resolutionMs / 1000}))`);
}
