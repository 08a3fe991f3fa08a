import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.ts';

/** Email outbox states (pending and retrying are due work). */
export type EmailDeliveryStatus = 'pending' | 'retrying' | 'sent' | 'failed';

/**
 * The durable email outbox (`eml_`): one row per invitation email, written in the invitation's
 * transaction. The body holds the one-time invite link, so it is stored AES-256-GCM encrypted and
 * erased once the delivery is final. `metadata` is public (shown in lists); everything else the
 * provider says stays private.
 */
export const emailDeliveries = pgTable(
  'email_deliveries',
  {
    /** `eml_` prefixed id. */
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['invitation'] }).notNull(),
    /** The invitation this email belongs to (one email per invitation). */
    invitationId: text('invitation_id'),
    recipient: text('recipient').notNull(),
    subject: text('subject').notNull(),
    /** Encrypted `{ text, html }`; null once the delivery is sent or failed. Never returned. */
    bodyCiphertext: text('body_ciphertext'),
    status: text('status', { enum: ['pending', 'retrying', 'sent', 'failed'] })
      .notNull()
      .default('pending'),
    attemptCount: integer('attempt_count').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date', precision: 3 }),
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date', precision: 3 }),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true, mode: 'date', precision: 3 }),
    sentAt: timestamp('sent_at', { withTimezone: true, mode: 'date', precision: 3 }),
    /** `resend` or `smtp`: which provider accepted (or refused) it last. */
    provider: text('provider'),
    /** Private: the provider's message id. */
    providerMessageId: text('provider_message_id'),
    /** Private: the provider's last error text (may echo addresses or configuration). */
    lastError: text('last_error'),
    /** Public, safe metadata shown in lists (invitation id, role key). */
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('email_deliveries_invitation_key').on(t.invitationId),
    index('email_deliveries_tenant_created_idx').on(t.tenantId, t.createdAt.desc(), t.id.desc()),
    index('email_deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} in ('pending', 'retrying')`),
  ],
);
