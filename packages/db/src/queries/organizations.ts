import { and, eq, getTableColumns, sql } from 'drizzle-orm';
import { type DbOrTx, leanRead } from '../client.ts';
import { type ExportSection, exportField } from '../export-section.ts';
import { organizations } from '../schema/organizations.ts';

export type OrganizationRow = typeof organizations.$inferSelect;

type Finder = (value: string) => Promise<OrganizationRow | undefined>;
const finders = { id: new WeakMap<DbOrTx, Finder>(), slug: new WeakMap<DbOrTx, Finder>() };

/**
 * The organization whose `column` is `value`: every authorized request reads one, so the
 * statement is built once per database handle (a transaction is its own handle) and runs as a
 * prepared statement rather than being rebuilt and planned per call.
 */
function findOrganizationBy(db: DbOrTx, column: 'id' | 'slug', value: string): Promise<OrganizationRow | undefined> {
  let find = finders[column].get(db);
  if (!find) {
    const query = db
      .select()
      .from(organizations)
      .where(eq(organizations[column], sql.placeholder('value')))
      .limit(1)
      .prepare(`svc_find_organization_by_${column}`);
    const read = leanRead<OrganizationRow>(query, getTableColumns(organizations));
    find = (v) => read.first({ value: v });
    finders[column].set(db, find);
  }
  return find(value);
}

export function findOrganizationById(db: DbOrTx, id: string): Promise<OrganizationRow | undefined> {
  return findOrganizationBy(db, 'id', id);
}

export function findOrganizationBySlug(db: DbOrTx, slug: string): Promise<OrganizationRow | undefined> {
  return findOrganizationBy(db, 'slug', slug);
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

/**
 * Renames or re-slugs an organization; undefined when another organization has the slug (the
 * unique index decides, so two racing updates cannot both win).
 */
export async function updateOrganization(
  db: DbOrTx,
  opts: { id: string; name?: string; slug?: string },
): Promise<OrganizationRow | undefined> {
  const [row] = await db
    .update(organizations)
    .set({
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.slug !== undefined ? { slug: opts.slug } : {}),
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(organizations.id, opts.id),
        opts.slug !== undefined
          ? sql`not exists (select 1 from ${organizations} o2 where o2.slug = ${opts.slug} and o2.id <> ${opts.id})`
          : undefined,
      ),
    )
    .returning()
    .catch((error: { cause?: { code?: string } }) => {
      if (error.cause?.code === '23505') {
        return [];
      }
      throw error;
    });
  return row;
}

/** In an export (queries/exports.ts): the organization itself. */
export const organizationExportSection: ExportSection = {
  key: 'organization',
  resource: 'organization',
  shape: 'one',
  source: 'snapshot',
  from: 'organizations t',
  tenantColumn: 't.id',
  orderBy: 't.id',
  fields: [
    exportField.text('id', 't.id'),
    exportField.text('slug', 't.slug'),
    exportField.text('name', 't.name'),
    exportField.time('createdAt', 't.created_at'),
    exportField.time('updatedAt', 't.updated_at'),
  ],
};
