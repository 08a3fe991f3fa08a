import type { EmailOutbox } from '@svc/jobs/email/process';
import type { AppServices } from '../../context.ts';

/** The outbox as this API process sends it: EMAIL_* settings, SVC_ENCRYPTION_KEY, the process log. */
export function emailOutboxOf(services: Pick<AppServices, 'config' | 'secretBox' | 'logger'>): EmailOutbox {
  return { settings: services.config.email, secretBox: services.secretBox, logger: services.logger };
}
