/** What an email says: the subject (stored in clear, shown in lists) and the body (sealed). */
export type EmailContent = { subject: string; text: string; html: string };

export type InvitationEmailInput = {
  organizationName: string;
  /** The one-time link: a secret, so the body holding it is sealed until sent and then erased. */
  inviteLink: string;
  /** The role's display name. */
  roleName: string;
  expiresAt: Date;
  /** Who sent it, when a person did (an API key's name is not shown to the invitee). */
  inviterName: string | null;
};

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text into HTML text or a double-quoted attribute value. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] as string);
}

/**
 * One line, no control characters: an organization name must not be able to add a header
 * (CR/LF) to the subject, whatever the name validation upstream allows.
 */
function oneLine(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  return value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

/** The invitation email: plain text and HTML say the same thing; every interpolated value escaped. */
export function invitationEmail(input: InvitationEmailInput): EmailContent {
  const org = oneLine(input.organizationName);
  const role = oneLine(input.roleName);
  const inviter = input.inviterName ? oneLine(input.inviterName) : null;
  const expires = input.expiresAt.toUTCString();
  const who = inviter ? `${inviter} invited you` : 'You have been invited';
  const subject = `You're invited to join ${org} on svc`;
  const text = [
    `${who} to join ${org} on svc as ${role}.`,
    '',
    'Accept the invitation:',
    input.inviteLink,
    '',
    `The link works once and expires ${expires}. If you did not expect this invitation, ignore this email.`,
  ].join('\n');
  const link = escapeHtml(input.inviteLink);
  const html = `<!doctype html>
<html>
  <body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #111">
    <p>${escapeHtml(who)} to join <strong>${escapeHtml(org)}</strong> on svc as <strong>${escapeHtml(role)}</strong>.</p>
    <p><a href="${link}" style="display: inline-block; padding: 8px 16px; background: #111; color: #fff; text-decoration: none; border-radius: 4px">Accept the invitation</a></p>
    <p style="color: #555; font-size: 14px">Or paste this link into your browser:<br><a href="${link}">${link}</a></p>
    <p style="color: #555; font-size: 14px">The link works once and expires ${escapeHtml(expires)}. If you did not expect this invitation, ignore this email.</p>
  </body>
</html>
`;
  return { subject, text, html };
}
