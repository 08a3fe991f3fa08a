import { randomBytes } from 'node:crypto';
import { AppError } from '@svc/contracts/errors';
import { newId } from '@svc/contracts/ids';
import { createDatabase, type Database } from '@svc/db/client';
import type { EmailDeliveryRow } from '@svc/db/queries/email-deliveries';
import { insertOrganization } from '@svc/db/queries/organizations';
import { emailDeliveries } from '@svc/db/schema/email-deliveries';
import { invitations } from '@svc/db/schema/invitations';
import { createSecretBox } from '@svc/db/secret-box';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/db.ts';
import { type ResendRecorder, type SmtpCapture, startResendRecorder, startSmtpCapture } from '../../../../test/support/mail.ts';
import { type JobLogger, startWorker } from '../runner.ts';
import { EMAIL_RETRY_SCHEDULE_MS, type EmailOutbox, processEmailDeliveries } from './process.ts';
import type { EmailOutboxSettings } from './providers.ts';
import { queueInvitationEmail } from './queue.ts';
import { escapeHtml, invitationEmail } from './template.ts';

const RESEND_KEY = `re_${randomBytes(18).toString('base64url')}`;
const secretBox = createSecretBox(randomBytes(32));

let url: string;
let database: Database;
let smtp: SmtpCapture;
let resend: ResendRecorder;
let tenantId: string;
let otherTenantId: string;

/** Every line every logger of this file wrote: no secret may ever appear in it. */
const logLines: string[] = [];
const logger: JobLogger = {
  debug: (obj, msg) => logLines.push(`${msg} ${JSON.stringify(obj)}`),
  info: (obj, msg) => logLines.push(`${msg} ${JSON.stringify(obj)}`),
  error: (obj, msg) => logLines.push(`${msg} ${JSON.stringify(obj)}`),
};

function settings(provider: 'smtp' | 'resend', overrides: Partial<EmailOutboxSettings> = {}): EmailOutboxSettings {
  return {
    enabled: true,
    provider,
    from: 'svc <invites@svc.example>',
    resendApiKey: RESEND_KEY,
    resendBaseUrl: resend.url,
    smtpUrl: smtp.url,
    ...overrides,
  };
}

function outbox(provider: 'smtp' | 'resend', overrides: Partial<EmailOutbox> = {}): EmailOutbox {
  return { settings: settings(provider), secretBox, logger, sendTimeoutMs: 5_000, ...overrides };
}

let n = 0;
/** A pending invitation and its queued email, as the invitation's transaction writes them. */
async function queue(
  opts: { tenant?: string; organizationName?: string } = {},
): Promise<{ row: EmailDeliveryRow; link: string; email: string }> {
  const tenant = opts.tenant ?? tenantId;
  const email = `invitee-${++n}-${Math.random().toString(36).slice(2, 7)}@example.com`;
  const invitationId = newId('invitation');
  const token = `svc_inv_${randomBytes(24).toString('base64url')}`;
  const link = `http://svc.test/invitations/accept?token=${token}`;
  const row = await database.db.transaction(async (tx) => {
    await tx.insert(invitations).values({
      id: invitationId,
      tenantId: tenant,
      email,
      roleKey: 'org_member',
      tokenHash: `hash-${invitationId}`,
      expiresAt: new Date(Date.now() + 3_600_000),
    });
    return queueInvitationEmail(tx, secretBox, {
      tenantId: tenant,
      invitationId,
      roleKey: 'org_member',
      recipient: email,
      content: invitationEmail({
        organizationName: opts.organizationName ?? 'Acme',
        inviteLink: link,
        roleName: 'Member',
        expiresAt: new Date(Date.now() + 3_600_000),
        inviterName: 'Ada',
      }),
    });
  });
  return { row, link, email };
}

async function rowOf(id: string): Promise<EmailDeliveryRow> {
  const [row] = await database.db.select().from(emailDeliveries).where(eq(emailDeliveries.id, id));
  if (!row) {
    throw new Error(`no delivery ${id}`);
  }
  return row;
}

/** Makes every waiting delivery due now (instead of waiting for the schedule). */
async function makeDue(): Promise<void> {
  await database.sql`update email_deliveries set next_attempt_at = now() - interval '1 second' where status in ('pending', 'retrying')`;
}

beforeAll(async () => {
  url = await createTestDatabase();
  database = createDatabase({ url, max: 10, applicationName: 'svc-email-test' });
  smtp = await startSmtpCapture();
  resend = await startResendRecorder();
  const org = await insertOrganization(database.db, { id: newId('organization'), slug: 'email-org', name: 'Email Org' });
  const other = await insertOrganization(database.db, { id: newId('organization'), slug: 'other-org', name: 'Other Org' });
  tenantId = org?.id as string;
  otherTenantId = other?.id as string;
});

beforeEach(async () => {
  // Each test starts with an empty outbox, provider and queue.
  await database.sql`delete from email_deliveries`;
  await database.sql`delete from graphile_worker._private_jobs`;
  smtp.refuse(null);
  smtp.received.splice(0);
  resend.answer(null);
  resend.requests.splice(0);
});

afterAll(async () => {
  await smtp?.close();
  await resend?.close();
  await database?.close();
  // The Resend key must never reach a log line, whatever happened above.
  expect(logLines.join('\n')).not.toContain(RESEND_KEY);
});

describe('invitation email template', () => {
  it('escapes the organization name in the HTML and keeps the subject on one line', () => {
    const content = invitationEmail({
      organizationName: 'Evil <script>alert(1)</script> & "Co"\r\nBcc: victim@example.com',
      inviteLink: 'https://svc.test/invitations/accept?token=svc_inv_a&b="c"',
      roleName: '<b>Admin</b>',
      expiresAt: new Date('2030-01-01T00:00:00Z'),
      inviterName: null,
    });
    expect(content.subject).toBe('You\'re invited to join Evil <script>alert(1)</script> & "Co" Bcc: victim@example.com on svc');
    expect(content.subject).not.toMatch(/[\r\n]/);
    expect(content.html).not.toContain('<script>');
    expect(content.html).toContain('Evil &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot;');
    expect(content.html).toContain('&lt;b&gt;Admin&lt;/b&gt;');
    expect(content.html).toContain('href="https://svc.test/invitations/accept?token=svc_inv_a&amp;b=&quot;c&quot;"');
    expect(content.text).toContain('https://svc.test/invitations/accept?token=svc_inv_a&b="c"');
    expect(escapeHtml(`'`)).toBe('&#39;');
  });
});

describe('queueInvitationEmail', () => {
  it('stores the body sealed to its row, the subject and public metadata in clear, and wakes the dispatcher in the same transaction', async () => {
    const { row, link } = await queue();
    expect(row).toMatchObject({ status: 'pending', attemptCount: 0, kind: 'invitation', subject: "You're invited to join Acme on svc" });
    expect(row.metadata).toEqual({ invitationId: row.invitationId, roleKey: 'org_member' });
    expect(row.bodyCiphertext).toMatch(/^v1\./);
    expect(row.bodyCiphertext).not.toContain(link.split('token=')[1]);
    const opened = JSON.parse(secretBox.open(row.bodyCiphertext as string, `email_delivery:${row.id}`)) as { text: string; html: string };
    expect(opened.text).toContain(link);
    // Bound to the row: the same ciphertext under another row's context does not open.
    expect(() => secretBox.open(row.bodyCiphertext as string, 'email_delivery:eml_other')).toThrow();
    const jobs = await database.sql<{ task_identifier: string; key: string | null }[]>`
      select task_identifier, key from graphile_worker.jobs`;
    expect(jobs).toEqual([{ task_identifier: 'email:dispatch', key: 'email:dispatch' }]);
  });

  it('rolls back with the invitation: no row, no job', async () => {
    await expect(
      database.db.transaction(async (tx) => {
        await queueInvitationEmail(tx, secretBox, {
          tenantId,
          invitationId: newId('invitation'),
          roleKey: 'org_member',
          recipient: 'rolled-back@example.com',
          content: { subject: 's', text: 't', html: 'h' },
        });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await database.sql`select id from email_deliveries`).toHaveLength(0);
    expect(await database.sql`select id from graphile_worker.jobs`).toHaveLength(0);
  });
});

describe('processEmailDeliveries over SMTP (a real smtp-server)', () => {
  it('sends the invitation with its link, records sent with the message id, erases the body', async () => {
    const { row, link, email } = await queue();
    const result = await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 });
    expect(result).toMatchObject({ processed: 1, sent: 1, failed: 0, retrying: 0 });
    const [received] = await smtp.waitFor(1);
    expect(received?.envelopeTo).toEqual([email]);
    expect(received?.to).toEqual([email]);
    expect(received?.from).toBe('invites@svc.example');
    expect(received?.subject).toBe("You're invited to join Acme on svc");
    expect(received?.text).toContain(link);
    expect(received?.html).toContain(`href="${link}"`);
    expect(received?.messageId).toBe(`<${row.id}@svc.example>`);

    const after = await rowOf(row.id);
    expect(after).toMatchObject({
      status: 'sent',
      attemptCount: 1,
      provider: 'smtp',
      bodyCiphertext: null,
      lockedUntil: null,
      nextAttemptAt: null,
    });
    expect(after.providerMessageId).toBe(`<${row.id}@svc.example>`);
    expect(after.sentAt).toBeInstanceOf(Date);
    expect(after.lastError).toBeNull();

    // Sent is final: processing again sends nothing.
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ processed: 0 });
    expect(smtp.received).toHaveLength(1);
  });

  it('authenticates with the credentials of SMTP_URL and never stores the password in the error', async () => {
    const password = `pw-${randomBytes(8).toString('hex')}`;
    await queue();
    const withAuth = outbox('smtp', {
      settings: settings('smtp', { smtpUrl: `smtp://mailer:${password}@127.0.0.1:${smtp.port}` }),
    });
    expect(await processEmailDeliveries(database.db, withAuth, { limit: 10 })).toMatchObject({ sent: 1 });
    expect(smtp.received[0]?.user).toBe('mailer');

    // A refused message whose text echoes the password: masked in the private column.
    const { row } = await queue();
    smtp.refuse(() => ({ code: 451, message: `try later (auth mailer:${password})` }));
    expect(await processEmailDeliveries(database.db, withAuth, { limit: 10 })).toMatchObject({ retrying: 1 });
    const after = await rowOf(row.id);
    expect(after.lastError).toContain('[redacted]');
    expect(after.lastError).not.toContain(password);
    expect(logLines.join('\n')).not.toContain(password);
  });

  it('a refusing server: retrying on the schedule, then failed after the last attempt, body erased', async () => {
    const { row } = await queue();
    smtp.refuse(() => ({ code: 451, message: 'mailbox busy, try again later' }));
    for (let attempt = 1; attempt <= EMAIL_RETRY_SCHEDULE_MS.length; attempt++) {
      const before = Date.now();
      const result = await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 });
      const after = await rowOf(row.id);
      expect(after.attemptCount).toBe(attempt);
      expect(after.lastError).toContain('451');
      expect(after.lastError).toContain('mailbox busy');
      if (attempt < EMAIL_RETRY_SCHEDULE_MS.length) {
        expect(result).toMatchObject({ processed: 1, retrying: 1, failed: 0, sent: 0 });
        expect(after.status).toBe('retrying');
        expect(after.bodyCiphertext).not.toBeNull();
        const wait = (after.nextAttemptAt as Date).getTime() - before;
        const expected = EMAIL_RETRY_SCHEDULE_MS[attempt] as number;
        expect(wait).toBeGreaterThanOrEqual(expected - 1_000);
        expect(wait).toBeLessThanOrEqual(expected + 5_000);
        // Not due yet: a round now attempts nothing.
        expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ processed: 0 });
        // A wake-up job waits for the retry time.
        const [job] = await database.sql<{ key: string }[]>`
          select key from graphile_worker.jobs
          where key like 'email:dispatch@%' and run_at >= ${(after.nextAttemptAt as Date).toISOString()}::timestamptz`;
        expect(job).toBeDefined();
        await makeDue();
      } else {
        expect(result).toMatchObject({ processed: 1, retrying: 0, failed: 1, sent: 0 });
        expect(after).toMatchObject({ status: 'failed', nextAttemptAt: null, bodyCiphertext: null, lockedUntil: null });
      }
    }
    expect(smtp.received).toHaveLength(0);
    // Failed is final.
    await makeDue();
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ processed: 0 });
  });

  it('a server that recovers: the retry sends it', async () => {
    const { row, link } = await queue();
    smtp.refuse((attempt) => (attempt === 1 ? { code: 421, message: 'service not available' } : null));
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ retrying: 1 });
    await makeDue();
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ sent: 1 });
    expect((await smtp.waitFor(1))[0]?.text).toContain(link);
    expect(await rowOf(row.id)).toMatchObject({ status: 'sent', attemptCount: 2, lastError: null, bodyCiphertext: null });
  });

  it('nothing listening: a connection failure is a retry', async () => {
    const { row } = await queue();
    const closed = outbox('smtp', { settings: settings('smtp', { smtpUrl: 'smtp://127.0.0.1:1' }) });
    expect(await processEmailDeliveries(database.db, closed, { limit: 10 })).toMatchObject({ processed: 1, retrying: 1 });
    expect((await rowOf(row.id)).lastError).toMatch(/ECONNREFUSED|ESOCKET|ECONNECTION/);
  });
});

describe('processEmailDeliveries through the Resend SDK (a local recording server)', () => {
  it('posts the email with the bearer key, an idempotency key and the link in the HTML', async () => {
    const { row, link, email } = await queue();
    const result = await processEmailDeliveries(database.db, outbox('resend'), { limit: 10 });
    expect(result).toMatchObject({ processed: 1, sent: 1 });
    expect(resend.requests).toHaveLength(1);
    const [req] = resend.requests;
    expect(req?.method).toBe('POST');
    expect(req?.path).toBe('/emails');
    expect(req?.headers.authorization).toBe(`Bearer ${RESEND_KEY}`);
    expect(req?.headers['idempotency-key']).toBe(`svc-email-${row.id}`);
    expect(req?.headers['user-agent']).toMatch(/^resend-node:/);
    const body = req?.json as { from: string; to: string[]; subject: string; html: string; text: string };
    expect(body.from).toBe('svc <invites@svc.example>');
    expect(body.to).toEqual([email]);
    expect(body.subject).toBe("You're invited to join Acme on svc");
    expect(body.html).toContain(`href="${link}"`);
    expect(body.text).toContain(link);
    const after = await rowOf(row.id);
    expect(after).toMatchObject({ status: 'sent', provider: 'resend', bodyCiphertext: null });
    expect(after.providerMessageId).toMatch(/^re_1_/);
  });

  it('a 500: retrying then failed per the schedule; the error kept privately and capped', async () => {
    const { row } = await queue();
    const longMessage = `upstream exploded ${'x'.repeat(2_000)}`;
    resend.answer(() => ({ status: 500, body: { name: 'internal_server_error', message: longMessage, statusCode: 500 } }));
    const schedule = [0, 60_000, 60_000];
    const short = outbox('resend', { retryScheduleMs: schedule });
    for (let attempt = 1; attempt <= schedule.length; attempt++) {
      const result = await processEmailDeliveries(database.db, short, { limit: 10 });
      const after = await rowOf(row.id);
      expect(after.attemptCount).toBe(attempt);
      expect(after.lastError).toMatch(/^resend: internal_server_error \(HTTP 500\): upstream exploded x+/);
      expect(after.lastError?.length).toBe(500);
      expect(after.status).toBe(attempt < schedule.length ? 'retrying' : 'failed');
      expect(result.processed).toBe(1);
      await makeDue();
    }
    expect(resend.requests).toHaveLength(3);
    // The same idempotency key on every attempt: Resend sends one email however often we ask.
    expect(new Set(resend.requests.map((r) => r.headers['idempotency-key']))).toEqual(new Set([`svc-email-${row.id}`]));
    expect((await rowOf(row.id)).bodyCiphertext).toBeNull();
  });

  it('a 422 and an unreachable API are failed attempts too, and the key never reaches the error or the log', async () => {
    const { row } = await queue();
    resend.answer(() => ({
      status: 422,
      body: { name: 'validation_error', message: `Invalid from field (key ${RESEND_KEY})`, statusCode: 422 },
    }));
    await processEmailDeliveries(database.db, outbox('resend'), { limit: 10 });
    const after = await rowOf(row.id);
    expect(after.status).toBe('retrying');
    expect(after.lastError).toContain('validation_error (HTTP 422)');
    expect(after.lastError).not.toContain(RESEND_KEY);

    await makeDue();
    const unreachable = outbox('resend', { settings: settings('resend', { resendBaseUrl: 'http://127.0.0.1:1' }) });
    await processEmailDeliveries(database.db, unreachable, { limit: 10 });
    expect((await rowOf(row.id)).lastError).toMatch(/^resend: application_error \(no response\)/);
    expect(logLines.join('\n')).not.toContain(RESEND_KEY);
  });
});

describe('claims', () => {
  it('two processors at once never send one delivery twice', async () => {
    const queued = await Promise.all(Array.from({ length: 30 }, () => queue()));
    const other = createDatabase({ url, max: 10, applicationName: 'svc-email-test-2' });
    try {
      // A slow provider widens the window in which both processors look at the same rows.
      resend.answer(() => ({ status: 200, body: { id: `re_${Math.random().toString(36).slice(2)}` }, delayMs: 20 }));
      const [a, b] = await Promise.all([
        processEmailDeliveries(database.db, outbox('resend'), { limit: 100 }),
        processEmailDeliveries(other.db, outbox('resend'), { limit: 100 }),
      ]);
      expect(a.sent + b.sent).toBe(30);
      expect(a.processed + b.processed).toBe(30);
    } finally {
      await other.close();
    }
    const keys = resend.requests.map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(30);
    expect(new Set(keys).size).toBe(30);
    expect(new Set(keys)).toEqual(new Set(queued.map((q) => `svc-email-${q.row.id}`)));
    const rows = await database.db.select().from(emailDeliveries);
    expect(rows.every((r) => r.status === 'sent' && r.attemptCount === 1)).toBe(true);
  });

  it('a row under a live claim is skipped; an expired claim is taken over, and the old claimer cannot record over it', async () => {
    const { row } = await queue();
    await database.sql`update email_deliveries set locked_until = now() + interval '1 minute' where id = ${row.id}`;
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ processed: 0 });
    // Also when selected by id.
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10, ids: [row.id] })).toMatchObject({ processed: 0 });
    // The claimer died: its lease ran out.
    await database.sql`update email_deliveries set locked_until = now() - interval '1 second', next_attempt_at = now() - interval '1 second' where id = ${row.id}`;
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ processed: 1, sent: 1 });
    expect(smtp.received).toHaveLength(1);
  });

  it('every claim queues a wake-up at the end of its lease', async () => {
    const { row } = await queue();
    smtp.refuse(() => ({ code: 451, message: 'later' }));
    await processEmailDeliveries(database.db, outbox('smtp', { sendTimeoutMs: 5_000 }), { limit: 10 });
    const jobs = await database.sql<{ key: string; run_at: string }[]>`
      select key, run_at::text from graphile_worker.jobs where key like 'email:dispatch@%' order by run_at`;
    const lastAttempt = (await rowOf(row.id)).lastAttemptAt as Date;
    // One for the retry (30 s) and one for the lease (send timeout + 60 s).
    expect(jobs).toHaveLength(2);
    expect(new Date(jobs[1]?.run_at as string).getTime() - lastAttempt.getTime()).toBeGreaterThanOrEqual(64_000);
  });

  it('ids select exactly those of the organization, due or not; limit bounds a round', async () => {
    const a = await queue();
    const b = await queue();
    const c = await queue({ tenant: otherTenantId });
    await database.sql`update email_deliveries set status = 'retrying', next_attempt_at = now() + interval '1 hour' where id = ${a.row.id}`;
    const result = await processEmailDeliveries(database.db, outbox('smtp'), { tenantId, ids: [a.row.id, c.row.id], limit: 10 });
    expect(result).toMatchObject({ processed: 1, sent: 1 });
    expect(result.deliveries.map((d) => d.id)).toEqual([a.row.id]);
    expect((await rowOf(c.row.id)).status).toBe('pending');
    expect((await rowOf(b.row.id)).status).toBe('pending');

    expect(await processEmailDeliveries(database.db, outbox('smtp'), { tenantId, limit: 10 })).toMatchObject({ processed: 1 });
    expect((await rowOf(b.row.id)).status).toBe('sent');
    expect((await rowOf(c.row.id)).status).toBe('pending');
    await queue();
    await queue();
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 2 })).toMatchObject({ processed: 2 });
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 })).toMatchObject({ processed: 1 });
  });
});

describe('what is never sent', () => {
  it('the email of a revoked invitation is not sent: failed, with the public reason', async () => {
    const { row } = await queue();
    await database.db
      .update(invitations)
      .set({ revokedAt: new Date() })
      .where(eq(invitations.id, row.invitationId as string));
    const result = await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10 });
    expect(result).toMatchObject({ processed: 1, failed: 1, sent: 0 });
    const after = await rowOf(row.id);
    expect(after).toMatchObject({ status: 'failed', bodyCiphertext: null, provider: null });
    expect(after.metadata).toMatchObject({ notSentReason: 'invitation_revoked' });
    expect(smtp.received).toHaveLength(0);
  });

  it('a body sealed under another key fails at once instead of retrying', async () => {
    const { row } = await queue();
    const otherBox = createSecretBox(randomBytes(32));
    const result = await processEmailDeliveries(database.db, outbox('smtp', { secretBox: otherBox }), { limit: 10 });
    expect(result).toMatchObject({ processed: 1, failed: 1 });
    expect(await rowOf(row.id)).toMatchObject({ status: 'failed', bodyCiphertext: null });
    expect((await rowOf(row.id)).lastError).toContain('SVC_ENCRYPTION_KEY');
  });

  it('disabled email is email_delivery_disabled, and nothing is claimed', async () => {
    const { row } = await queue();
    const disabled = outbox('smtp', { settings: settings('smtp', { enabled: false, provider: null }) });
    const error = await processEmailDeliveries(database.db, disabled, { limit: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('email_delivery_disabled');
    expect(await rowOf(row.id)).toMatchObject({ status: 'pending', attemptCount: 0 });
  });

  it('an aborted signal claims nothing', async () => {
    await queue();
    const stop = new AbortController();
    stop.abort();
    expect(await processEmailDeliveries(database.db, outbox('smtp'), { limit: 10, signal: stop.signal })).toMatchObject({ processed: 0 });
  });
});

describe('the email:dispatch task in a Graphile worker', () => {
  const webhooks = { allowPrivate: true, timeoutMs: 5_000, retryScheduleMs: [0], secretGraceMs: 0 };

  async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await check())) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('a worker with a provider sends what the invitation queued, through the job the invitation added', async () => {
    const { row, link } = await queue();
    const worker = await startWorker({
      connectionString: url,
      db: database.db,
      logger,
      pollInterval: 50,
      secretBox,
      webhooks,
      email: settings('smtp'),
    });
    try {
      const [received] = await smtp.waitFor(1);
      expect(received?.text).toContain(link);
      await waitFor(async () => (await rowOf(row.id)).status === 'sent', 'the delivery to be recorded as sent');
      // The job that woke it is done (only wake-ups for later remain).
      await waitFor(
        async () => (await database.sql`select id from graphile_worker.jobs where key = 'email:dispatch'`).length === 0,
        'the dispatch job to complete',
      );
    } finally {
      await worker.stop();
    }
    expect(smtp.received).toHaveLength(1);
  });

  it('a worker without a provider completes the job and leaves the email due for one that has it', async () => {
    const { row } = await queue();
    const worker = await startWorker({ connectionString: url, db: database.db, logger, pollInterval: 50, secretBox, webhooks });
    try {
      await waitFor(
        async () => (await database.sql`select id from graphile_worker.jobs where key = 'email:dispatch'`).length === 0,
        'the dispatch job to complete',
      );
    } finally {
      await worker.stop();
    }
    expect(await rowOf(row.id)).toMatchObject({ status: 'pending', attemptCount: 0 });
    expect(smtp.received).toHaveLength(0);
    expect(logLines.some((l) => l.includes('email delivery is disabled in this worker'))).toBe(true);

    // A worker with a provider sends it when it starts, without any new invitation.
    const next = await startWorker({
      connectionString: url,
      db: database.db,
      logger,
      pollInterval: 50,
      secretBox,
      webhooks,
      email: settings('smtp'),
    });
    try {
      await smtp.waitFor(1);
      await waitFor(async () => (await rowOf(row.id)).status === 'sent', 'the delivery to be sent by the next worker');
    } finally {
      await next.stop();
    }
  });
});
