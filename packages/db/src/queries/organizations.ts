import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../client.ts';
import { organizations } from '../schema/organizations.ts';

export type OrganizationRow = typeof organizations.$inferSelect;

export async function findOrganizationById(db: DbOrTx, id: string): Promise<OrganizationRow | undefined> {
  const [row] = await db.select().from(organizations).where(eq(organizations.id, id)).limit(1);
  return row;
}

export async function findOrganizationBySlug(db: DbOrTx, slug: string): Promise<OrganizationRow | undefined> {
  const [row] = await db.select().from(organizations).where(eq(organizations.slug, slug)).limit(1);
  return row;
}

/** Creates the organization unless one with the slug exists; returns the row either way. */
export async function ensureOrganization(
  db: DbOrTx,
  values: { id: string; slug: string; name: string; kind?: OrganizationRow['kind'] },
): Promise<OrganizationRow> {
  await db.insert(organizations).values(values).onConflictDoNothing({ target: organizations.slug });
  const row = await findOrganizationBySlug(db, values.slug);
  if (!row) {
    throw new Error(`organization ${values.slug} vanished after insert`);
  }
  return row;
}

/** Inserts a new organization; undefined when the slug is taken (never returns someone else's). */
export async function insertOrganization(
  db: DbOrTx,
  values: { id: string; slug: string; name: string; kind?: OrganizationRow['kind'] },
): Promise<OrganizationRow | undefined> {
  const [row] = await db.insert(organizations).values(values).onConflictDoNothing({ target: organizations.slug }).returning();
  return row;
}
