import nodemailer from 'nodemailer';
import SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { Resend } from 'resend';

/**
 * The email settings the outbox reads (apps/api env.ts `config.email` has this shape). The Resend
 * key and the SMTP URL (which may carry a password) are secrets: never log this object.
 */
export type EmailOutboxSettings = {
  /** EMAIL_ENABLED and a provider. */
  enabled: boolean;
  provider: 'resend' | 'smtp' | null;
  /** The From header, e.g. `svc <invites@example.com>`. */
  from: string | null;
  resendApiKey: string | null;
  /** Resend's API base; tests point it at a local recording server. */
  resendBaseUrl: string;
  smtpUrl: string | null;
};

/** One email to one recipient. */
export type OutgoingEmail = {
  /** The outbox row's id: Resend's idempotency key and the SMTP Message-ID, so a re-send after a crash can be recognised. */
  deliveryId: string;
  to: string;
  subject: string;
  text: string;
  html: string;
};

/** A provider refused the email or could not be reached; `message` is private (it may quote addresses or configuration). */
export class EmailSendError extends Error {
  override name = 'EmailSendError';
}

export type EmailProvider = {
  name: 'resend' | 'smtp';
  /** Resolves with the provider's message id once the provider accepted the email. */
  send: (email: OutgoingEmail) => Promise<{ messageId: string | null }>;
  close: () => void;
};

/**
 * The configured provider behind one interface: `resend` through the official SDK (its API base
 * configurable), `smtp` through nodemailer. `timeoutMs` bounds each send; a send that outlives it
 * is a failure (the lease on the row is longer, so no second claimer starts meanwhile).
 */
export function createEmailProvider(settings: EmailOutboxSettings, opts: { timeoutMs: number }): EmailProvider {
  if (!settings.enabled || !settings.provider || !settings.from) {
    throw new Error('email delivery is disabled: no provider to create');
  }
  const from = settings.from;
  if (settings.provider === 'resend') {
    if (!settings.resendApiKey) {
      throw new Error('RESEND_API_KEY is not set');
    }
    return resendProvider(settings.resendApiKey, settings.resendBaseUrl, from, opts.timeoutMs);
  }
  if (!settings.smtpUrl) {
    throw new Error('SMTP_URL is not set');
  }
  return smtpProvider(settings.smtpUrl, from, opts.timeoutMs);
}

function resendProvider(apiKey: string, baseUrl: string, from: string, timeoutMs: number): EmailProvider {
  const client = new Resend(apiKey, { baseUrl });
  return {
    name: 'resend',
    async send(email) {
      const { data, error } = await client.emails.send(
        { from, to: [email.to], subject: email.subject, text: email.text, html: email.html },
        // Resend keeps the key 24 hours: a retry after a crash between its 200 and our record of
        // it is recognised instead of sent twice.
        { idempotencyKey: `svc-email-${email.deliveryId}`, signal: AbortSignal.timeout(timeoutMs) },
      );
      if (error) {
        const status = error.statusCode === null ? 'no response' : `HTTP ${error.statusCode}`;
        throw new EmailSendError(`resend: ${error.name} (${status}): ${error.message}`);
      }
      return { messageId: data?.id ?? null };
    },
    close() {},
  };
}

function smtpProvider(url: string, from: string, timeoutMs: number): EmailProvider {
  // The transport object (rather than createTransport(url)) so the timeouts apply: a URL alone
  // would leave nodemailer's defaults of minutes. Settings in the URL still win.
  const transport = nodemailer.createTransport(
    new SMTPTransport({ url, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs }),
  );
  const domain = /@([^>\s]+)>?\s*$/.exec(from)?.[1] ?? 'svc.invalid';
  return {
    name: 'smtp',
    async send(email) {
      try {
        const info = await withDeadline(
          transport.sendMail({
            from,
            to: email.to,
            subject: email.subject,
            text: email.text,
            html: email.html,
            messageId: `<${email.deliveryId}@${domain}>`,
          }),
          timeoutMs,
        );
        if (info.rejected.length > 0) {
          throw new EmailSendError(`smtp: recipient rejected: ${info.response}`);
        }
        return { messageId: info.messageId ?? null };
      } catch (error) {
        if (error instanceof EmailSendError) {
          throw error;
        }
        const e = error as Error & { code?: string; responseCode?: number };
        const code = [e.code, e.responseCode].filter((v) => v !== undefined).join(' ');
        throw new EmailSendError(`smtp: ${code ? `${code}: ` : ''}${e.message}`);
      }
    },
    close() {
      transport.close();
    },
  };
}

/** The promise, or an error once `ms` have passed (the slow send is abandoned, not cancelled). */
async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EmailSendError(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
