import { newId } from '@svc/contracts/ids';
import type { DbOrTx } from '@svc/db/client';
import { type EmailDeliveryRow, queueEmailDelivery } from '@svc/db/queries/email-deliveries';
import type { SecretBox } from '@svc/db/secret-box';
import { emailBodyContext } from './process.ts';
import type { EmailContent } from './template.ts';

/**
 * Puts an invitation email in the outbox through the invitation's transaction (docs/architecture.md
 * section 5): the body, which holds the one-time link, sealed to this row; the subject and the
 * public metadata in clear; the dispatcher woken in the same transaction.
 */
export async function queueInvitationEmail(
  tx: DbOrTx,
  secretBox: SecretBox,
  email: { tenantId: string; invitationId: string; roleKey: string; recipient: string; content: EmailContent },
): Promise<EmailDeliveryRow> {
  const id = newId('emailDelivery');
  const body = JSON.stringify({ text: email.content.text, html: email.content.html });
  return queueEmailDelivery(tx, {
    id,
    tenantId: email.tenantId,
    invitationId: email.invitationId,
    recipient: email.recipient,
    subject: email.content.subject,
    bodyCiphertext: secretBox.seal(body, emailBodyContext(id)),
    metadata: { invitationId: email.invitationId, roleKey: email.roleKey },
  });
}
