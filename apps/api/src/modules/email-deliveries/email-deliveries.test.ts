import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { newId } from '@svc/contracts/ids';
import type { OrganizationRow } from '@svc/db/queries/organizations';
import { emailDeliveries } from '@svc/db/schema/email-deliveries';
import { EMAIL_RETRY_SCHEDULE_MS } from '@svc/jobs/email/process';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAuthMatrix } from '../../../../../test/support/auth-matrix.ts';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { type ResendRecorder, type SmtpCapture, startResendRecorder, startSmtpCapture } from '../../../../../test/support/mail.ts';
import { freePort, startTestServer, TEST_ENV } from '../../../../../test/support/server.ts';
import { type SignedIn, seedOrganization, seedSignedIn } from '../../../../../test/support/tenancy.ts';
import { loadConfig } from '../../env.ts';
import { createLogger } from '../../logging.ts';
import { type RunningServer, startServer } from '../../server.ts';
import { MATRIX } from './email-deliveries.matrix.ts';

type Json = Record<string, any>;
type Reply = { status: number; body: Json; text: string };

/** Exactly what a listed delivery may show (docs/architecture.md section 7). */
const DELIVERY_KEYS = [
  'attemptCount',
  'createdAt',
  'id',
  'kind',
  'lastAttemptAt',
  'metadata',
  'nextAttemptAt',
  'recipient',
  'sentAt',
  'status',
  'subject',
  'updatedAt',
];

const EMAIL_FROM = 'svc invitations <invites@svc.example>';
const RESEND_KEY = `re_${randomBytes(18).toString('base64url')}`;

let smtp: SmtpCapture;
let resend: ResendRecorder;
/** Email through SMTP (a real smtp-server): the matrix, the routes, sanitizing. */
let server: RunningServer;
/** Email through the Resend SDK against the recording server, logging at debug into memory. */
let resendServer: RunningServer;
const resendLog: string[] = [];
/** No provider: invite links are copied by hand. */
let disabledServer: RunningServer;

async function call(
  target: RunningServer,
  method: 'GET' | 'POST',
  path: string,
  opts: { cookie?: string; authorization?: string; body?: unknown } = {},
): Promise<Reply> {
  const res = await fetch(`${target.url}${path}`, {
    method,
    headers: {
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...(opts.authorization ? { authorization: opts.authorization } : {}),
      ...(method === 'POST' ? { 'content-type': 'application/json', origin: target.services.config.publicUrl } : {}),
    },
    body: method === 'POST' ? JSON.stringify(opts.body ?? {}) : undefined,
  });
  const text = await res.text();
  let body: Json = {};
  try {
    body = JSON.parse(text) as Json;
  } catch {
    // Not JSON.
  }
  return { status: res.status, body, text };
}

async function adminOfNewOrg(target: RunningServer, name?: string): Promise<{ org: OrganizationRow; admin: SignedIn }> {
  const org = await seedOrganization(target.services.db, name ? { name } : {});
  const admin = await seedSignedIn(target.services.db, { organization: org, roleKey: 'org_admin', name: 'Grace Hopper' });
  return { org, admin };
}

let counter = 0;
const freshEmail = () => `invitee-${++counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;

async function invite(target: RunningServer, admin: SignedIn, org: OrganizationRow, email = freshEmail()): Promise<Json> {
  const res = await call(target, 'POST', '/v1/invitations', { cookie: admin.cookie, body: { organization_slug: org.slug, email } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function rowOf(target: RunningServer, id: string) {
  const [row] = await target.services.db.select().from(emailDeliveries).where(eq(emailDeliveries.id, id));
  if (!row) {
    throw new Error(`no delivery ${id}`);
  }
  return row;
}

beforeAll(async () => {
  smtp = await startSmtpCapture();
  resend = await startResendRecorder();
  server = await startTestServer({
    env: { EMAIL_ENABLED: 'true', EMAIL_PROVIDER: 'smtp', SMTP_URL: smtp.url, EMAIL_FROM, RATE_LIMIT_INVITATIONS_PER_MINUTE: '1000' },
  });
  disabledServer = await startTestServer({ env: { RATE_LIMIT_INVITATIONS_PER_MINUTE: '1000' } });
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      resendLog.push(String(chunk));
      callback();
    },
  });
  const config = loadConfig({
    ...TEST_ENV,
    LOG_LEVEL: 'debug',
    PORT: String(await freePort()),
    DATABASE_URL: await createTestDatabase(),
    EMAIL_ENABLED: 'true',
    EMAIL_PROVIDER: 'resend',
    RESEND_API_KEY: RESEND_KEY,
    RESEND_BASE_URL: resend.url,
    EMAIL_FROM,
  });
  resendServer = await startServer(config, createLogger(config, sink));
});

afterAll(async () => {
  await server?.close();
  await disabledServer?.close();
  await resendServer?.close();
  await smtp?.close();
  await resend?.close();
});

describeAuthMatrix('email deliveries', () => server, MATRIX);

describe('an invitation with email enabled', () => {
  it('queues its email in the invitation transaction; the answer has the delivery id and status, never the body', async () => {
    const { org, admin } = await adminOfNewOrg(server, 'Acme Rockets');
    const email = freshEmail();
    const created = await invite(server, admin, org, email);
    expect(created.emailDelivery).toEqual({ id: expect.stringMatching(/^eml_[0-9A-Za-z]{20}$/), status: 'pending' });
    expect(Object.keys(created).sort()).toEqual(['emailDelivery', 'invitation', 'invitationToken', 'inviteLink']);

    const row = await rowOf(server, created.emailDelivery.id);
    expect(row).toMatchObject({
      tenantId: org.id,
      invitationId: created.invitation.id,
      recipient: email,
      subject: "You're invited to join Acme Rockets on svc",
      status: 'pending',
      metadata: { invitationId: created.invitation.id, roleKey: 'org_member' },
    });
    // Sealed: the token is not readable in the table.
    expect(row.bodyCiphertext).toMatch(/^v1\./);
    expect(row.bodyCiphertext).not.toContain(created.invitationToken);
    const jobs = await server.services.sql<{ key: string }[]>`
      select key from graphile_worker.jobs where task_identifier = 'email:dispatch' and key = 'email:dispatch'`;
    expect(jobs).toHaveLength(1);

    // Processing now sends it: the email carries the one-time link.
    smtp.refuse(null);
    const before = smtp.received.length;
    const processed = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(processed.status, processed.text).toBe(200);
    expect(processed.body).toMatchObject({ processed: 1, sent: 1, failed: 0, retrying: 0 });
    expect(processed.body.deliveries).toHaveLength(1);
    expect(Object.keys(processed.body.deliveries[0]).sort()).toEqual(DELIVERY_KEYS);
    expect(processed.body.deliveries[0]).toMatchObject({ id: created.emailDelivery.id, status: 'sent', attemptCount: 1, recipient: email });
    const received = (await smtp.waitFor(before + 1)).find((m) => m.to.includes(email));
    expect(received?.subject).toBe("You're invited to join Acme Rockets on svc");
    expect(received?.from).toBe('invites@svc.example');
    expect(received?.text).toContain(created.inviteLink);
    expect(received?.html).toContain(`href="${created.inviteLink}"`);
    expect(received?.text).toContain('Grace Hopper invited you');
    expect((await rowOf(server, created.emailDelivery.id)).bodyCiphertext).toBeNull();
  });

  it('an invitation revoked before its email went out: the email is not sent, and the list says why', async () => {
    const { org, admin } = await adminOfNewOrg(server);
    const created = await invite(server, admin, org);
    const revoked = await call(server, 'POST', `/v1/invitations/${created.invitation.id}/revoke?organization_slug=${org.slug}`, {
      cookie: admin.cookie,
    });
    expect(revoked.status, revoked.text).toBe(200);
    const before = smtp.received.length;
    const processed = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(processed.body).toMatchObject({ processed: 1, sent: 0, failed: 1 });
    expect(processed.body.deliveries[0]).toMatchObject({ status: 'failed', metadata: { notSentReason: 'invitation_revoked' } });
    expect(smtp.received).toHaveLength(before);
  });
});

describe('GET /v1/email-deliveries', () => {
  it('lists newest first with the sanitized fields, filters by status and pages with a cursor', async () => {
    const { org, admin } = await adminOfNewOrg(server);
    const first = await invite(server, admin, org);
    const second = await invite(server, admin, org);
    const third = await invite(server, admin, org);
    // The first is sent; the other two wait.
    const sent = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, ids: [first.emailDelivery.id] },
    });
    expect(sent.body).toMatchObject({ processed: 1, sent: 1 });

    const all = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(all.status, all.text).toBe(200);
    expect(all.body.data.map((d: Json) => d.id)).toEqual([third.emailDelivery.id, second.emailDelivery.id, first.emailDelivery.id]);
    expect(all.body.nextCursor).toBeNull();
    for (const d of all.body.data) {
      expect(Object.keys(d).sort()).toEqual(DELIVERY_KEYS);
    }
    expect(all.body.data[2]).toMatchObject({ status: 'sent', attemptCount: 1, nextAttemptAt: null });
    expect(all.body.data[2].sentAt).toEqual(expect.any(String));
    expect(all.body.data[0]).toMatchObject({ status: 'pending', attemptCount: 0, sentAt: null, lastAttemptAt: null, kind: 'invitation' });

    const pending = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}&status=pending`, {
      cookie: admin.cookie,
    });
    expect(pending.body.data.map((d: Json) => d.id)).toEqual([third.emailDelivery.id, second.emailDelivery.id]);

    const page1 = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}&limit=2`, { cookie: admin.cookie });
    expect(page1.body.data).toHaveLength(2);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}&limit=2&cursor=${page1.body.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(page2.body.data.map((d: Json) => d.id)).toEqual([first.emailDelivery.id]);
    expect(page2.body.nextCursor).toBeNull();
    // A cursor is bound to its filters.
    const mismatched = await call(
      server,
      'GET',
      `/v1/email-deliveries?organization_slug=${org.slug}&status=sent&cursor=${page1.body.nextCursor}`,
      { cookie: admin.cookie },
    );
    expect(mismatched.status).toBe(400);

    const bad = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}&status=bounced`, { cookie: admin.cookie });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
  });

  it("another organization's deliveries are not listed", async () => {
    const mine = await adminOfNewOrg(server);
    const theirs = await adminOfNewOrg(server);
    await invite(server, theirs.admin, theirs.org);
    const list = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${mine.org.slug}`, { cookie: mine.admin.cookie });
    expect(list.body.data).toEqual([]);
  });
});

describe('never in any answer: body, provider message id, provider error text, private or unsafe metadata', () => {
  it('a row full of recognisable private values answers only its public fields', async () => {
    const { org, admin } = await adminOfNewOrg(server);
    const id = newId('emailDelivery');
    const secrets = {
      body: 'v1.BODYCIPHERTEXT-7f3a',
      messageId: 'PROVIDER-MESSAGE-ID-91c2',
      error: 'PROVIDER-ERROR-TEXT-5be0 550 relay denied for secret-config',
      unsafe: 'UNSAFE-METADATA-0d4e',
    };
    await server.services.db.insert(emailDeliveries).values({
      id,
      tenantId: org.id,
      kind: 'invitation',
      // No invitation: the attempt below goes as far as opening the body.
      invitationId: null,
      recipient: 'someone@example.com',
      subject: 'Subject',
      bodyCiphertext: secrets.body,
      status: 'retrying',
      attemptCount: 2,
      nextAttemptAt: new Date(Date.now() + 3_600_000),
      provider: 'smtp',
      providerMessageId: secrets.messageId,
      lastError: secrets.error,
      metadata: { invitationId: 'inv_public', roleKey: 'org_member', providerResponse: secrets.unsafe, notSentReason: secrets.unsafe },
    });
    const list = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.status).toBe(200);
    const listed = list.body.data.find((d: Json) => d.id === id);
    expect(Object.keys(listed).sort()).toEqual(DELIVERY_KEYS);
    // An unknown or malformed metadata value drops the metadata rather than leak it.
    expect(listed.metadata).toEqual({});
    for (const value of Object.values(secrets)) {
      expect(list.text).not.toContain(value);
    }

    // Processing it (it fails: the body is not a real sealed value) answers the same way.
    const processed = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, ids: [id] },
    });
    expect(processed.status, processed.text).toBe(200);
    expect(processed.body).toMatchObject({ processed: 1, failed: 1 });
    for (const value of Object.values(secrets)) {
      expect(processed.text).not.toContain(value);
    }
    // The private columns keep what the operator needs; the API does not show it.
    const row = await rowOf(server, id);
    expect(row.providerMessageId).toBe(secrets.messageId);
    expect(row.lastError).toContain('could not be opened');
  });

  it("a provider's refusal stays in the row: the answer says retrying, not what the provider said", async () => {
    const { org, admin } = await adminOfNewOrg(server);
    const created = await invite(server, admin, org);
    const refusal = 'SMTP-REFUSAL-TEXT-3c9d greylisted, try again';
    smtp.refuse(() => ({ code: 451, message: refusal }));
    try {
      const processed = await call(server, 'POST', '/v1/email-deliveries/process', {
        cookie: admin.cookie,
        body: { organization_slug: org.slug, ids: [created.emailDelivery.id] },
      });
      expect(processed.body).toMatchObject({ processed: 1, retrying: 1 });
      expect(processed.text).not.toContain('SMTP-REFUSAL-TEXT');
      const list = await call(server, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}`, { cookie: admin.cookie });
      expect(list.text).not.toContain('SMTP-REFUSAL-TEXT');
      expect((await rowOf(server, created.emailDelivery.id)).lastError).toContain(refusal);
    } finally {
      smtp.refuse(null);
    }
  });
});

describe('POST /v1/email-deliveries/process', () => {
  it('selected ids: a malformed id is 400; an unknown one or one of another organization is the same 404', async () => {
    const mine = await adminOfNewOrg(server);
    const theirs = await adminOfNewOrg(server);
    const theirInvite = await invite(server, theirs.admin, theirs.org);
    const malformed = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: mine.admin.cookie,
      body: { organization_slug: mine.org.slug, ids: ['eml_nope'] },
    });
    expect(malformed.status).toBe(400);
    const foreign = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: mine.admin.cookie,
      body: { organization_slug: mine.org.slug, ids: [theirInvite.emailDelivery.id] },
    });
    const unknown = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: mine.admin.cookie,
      body: { organization_slug: mine.org.slug, ids: [newId('emailDelivery')] },
    });
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect(foreign.body.error.message).toBe(unknown.body.error.message);
    // Nothing of theirs was touched.
    expect((await rowOf(server, theirInvite.emailDelivery.id)).attemptCount).toBe(0);
  });

  it('without ids: only the due deliveries of this organization, at most EMAIL_DELIVERY_WORKER_BATCH_SIZE', async () => {
    const { org, admin } = await adminOfNewOrg(server);
    const other = await adminOfNewOrg(server);
    const later = await invite(server, admin, org);
    const due = await invite(server, admin, org);
    const theirs = await invite(server, other.admin, other.org);
    await server.services.db
      .update(emailDeliveries)
      .set({ status: 'retrying', nextAttemptAt: new Date(Date.now() + 600_000) })
      .where(eq(emailDeliveries.id, later.emailDelivery.id));
    const processed = await call(server, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(processed.body).toMatchObject({ processed: 1, sent: 1 });
    expect(processed.body.deliveries.map((d: Json) => d.id)).toEqual([due.emailDelivery.id]);
    expect((await rowOf(server, later.emailDelivery.id)).status).toBe('retrying');
    expect((await rowOf(server, theirs.emailDelivery.id)).status).toBe('pending');
  });

  it('is audited with the counts', async () => {
    const { org, admin } = await adminOfNewOrg(server);
    await invite(server, admin, org);
    await call(server, 'POST', '/v1/email-deliveries/process', { cookie: admin.cookie, body: { organization_slug: org.slug } });
    const audit = await call(server, 'GET', `/v1/audit-logs?organization_slug=${org.slug}&action=email_delivery.processed`, {
      cookie: admin.cookie,
    });
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0].summary).toMatchObject({ processed: 1, sent: 1, failed: 0, retrying: 0 });
  });
});

describe('email delivery disabled (no provider)', () => {
  it('an invitation queues nothing and records nothing: the link is copied by hand', async () => {
    const { org, admin } = await adminOfNewOrg(disabledServer);
    const created = await invite(disabledServer, admin, org);
    expect(created.emailDelivery).toBeNull();
    expect(created.inviteLink).toContain(created.invitationToken);
    expect(await disabledServer.services.db.select().from(emailDeliveries)).toEqual([]);
    const jobs = await disabledServer.services.sql`select id from graphile_worker.jobs where task_identifier = 'email:dispatch'`;
    expect(jobs).toHaveLength(0);
  });

  it('processing answers 409 email_delivery_disabled; listing still works', async () => {
    const { org, admin } = await adminOfNewOrg(disabledServer);
    const res = await call(disabledServer, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('email_delivery_disabled');
    expect(res.body.error.message).toMatch(/EMAIL_ENABLED/);
    expect(res.body.error.requestId).toEqual(expect.any(String));
    const list = await call(disabledServer, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}`, { cookie: admin.cookie });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [], nextCursor: null });
  });

  it('an outsider learns nothing, not even that email is disabled: 404', async () => {
    const { org } = await adminOfNewOrg(disabledServer);
    const outsider = await adminOfNewOrg(disabledServer);
    const res = await call(disabledServer, 'POST', '/v1/email-deliveries/process', {
      cookie: outsider.admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(res.status).toBe(404);
  });
});

describe('Resend through its official SDK (a local recording server stands in for the hosted API)', () => {
  it('sends the invitation: bearer key, from, to, subject, and the link in the HTML; the key in no answer and no log line', async () => {
    const { org, admin } = await adminOfNewOrg(resendServer, 'Initech');
    const email = freshEmail();
    const created = await invite(resendServer, admin, org, email);
    resend.answer(null);
    const before = resend.requests.length;
    const processed = await call(resendServer, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug },
    });
    expect(processed.status, processed.text).toBe(200);
    expect(processed.body).toMatchObject({ processed: 1, sent: 1 });
    const request = resend.requests[before];
    expect(resend.requests).toHaveLength(before + 1);
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/emails');
    expect(request?.headers.authorization).toBe(`Bearer ${RESEND_KEY}`);
    expect(request?.headers['idempotency-key']).toBe(`svc-email-${created.emailDelivery.id}`);
    const body = request?.json as Json;
    expect(body.from).toBe(EMAIL_FROM);
    expect(body.to).toEqual([email]);
    expect(body.subject).toBe("You're invited to join Initech on svc");
    expect(body.html).toContain(`href="${created.inviteLink}"`);
    expect(body.text).toContain(created.inviteLink);
    const row = await rowOf(resendServer, created.emailDelivery.id);
    expect(row).toMatchObject({ status: 'sent', provider: 'resend', bodyCiphertext: null });
    expect(row.providerMessageId).toMatch(/^re_/);

    const list = await call(resendServer, 'GET', `/v1/email-deliveries?organization_slug=${org.slug}`, { cookie: admin.cookie });
    for (const text of [JSON.stringify(created), processed.text, list.text]) {
      expect(text).not.toContain(RESEND_KEY);
      expect(text).not.toContain(row.providerMessageId as string);
    }
    const log = resendLog.join('');
    expect(log).toContain('email delivery sent');
    expect(log).not.toContain(RESEND_KEY);
  });

  it('a 500 from Resend: retrying on the schedule, then failed; the provider text never in an answer', async () => {
    const { org, admin } = await adminOfNewOrg(resendServer);
    const created = await invite(resendServer, admin, org);
    const id = created.emailDelivery.id;
    resend.answer(() => ({ status: 500, body: { name: 'internal_server_error', message: 'RESEND-DOWN-84af', statusCode: 500 } }));
    try {
      for (let attempt = 1; attempt <= EMAIL_RETRY_SCHEDULE_MS.length; attempt++) {
        const started = Date.now();
        // Selected by id: attempted now, whatever its next-attempt time.
        const res = await call(resendServer, 'POST', '/v1/email-deliveries/process', {
          cookie: admin.cookie,
          body: { organization_slug: org.slug, ids: [id] },
        });
        expect(res.status, res.text).toBe(200);
        expect(res.text).not.toContain('RESEND-DOWN');
        const [delivery] = res.body.deliveries;
        expect(delivery.attemptCount).toBe(attempt);
        if (attempt < EMAIL_RETRY_SCHEDULE_MS.length) {
          expect(res.body).toMatchObject({ processed: 1, retrying: 1 });
          expect(delivery.status).toBe('retrying');
          const wait = Date.parse(delivery.nextAttemptAt) - started;
          expect(wait).toBeGreaterThanOrEqual((EMAIL_RETRY_SCHEDULE_MS[attempt] as number) - 1_000);
          expect(wait).toBeLessThanOrEqual((EMAIL_RETRY_SCHEDULE_MS[attempt] as number) + 5_000);
        } else {
          expect(res.body).toMatchObject({ processed: 1, failed: 1 });
          expect(delivery).toMatchObject({ status: 'failed', nextAttemptAt: null });
        }
      }
    } finally {
      resend.answer(null);
    }
    const row = await rowOf(resendServer, id);
    expect(row.lastError).toContain('RESEND-DOWN-84af');
    expect(row.bodyCiphertext).toBeNull();
    // Failed is final: selecting it again attempts nothing.
    const again = await call(resendServer, 'POST', '/v1/email-deliveries/process', {
      cookie: admin.cookie,
      body: { organization_slug: org.slug, ids: [id] },
    });
    expect(again.body).toMatchObject({ processed: 0, sent: 0, failed: 0, retrying: 0 });
    expect(again.body.deliveries[0]).toMatchObject({ id, status: 'failed' });
    expect(resendLog.join('')).not.toContain(RESEND_KEY);
  });
});

describe('EMAIL_DELIVERY_WORKER_ENABLED', () => {
  it('the API server sends due deliveries in the background at its interval, and stops with the server', async () => {
    const background = await startTestServer({
      env: {
        EMAIL_ENABLED: 'true',
        EMAIL_PROVIDER: 'smtp',
        SMTP_URL: smtp.url,
        EMAIL_FROM,
        EMAIL_DELIVERY_WORKER_ENABLED: 'true',
        EMAIL_DELIVERY_WORKER_INTERVAL_MS: '200',
        EMAIL_DELIVERY_WORKER_BATCH_SIZE: '2',
      },
    });
    let closed = false;
    try {
      const { org, admin } = await adminOfNewOrg(background);
      const emails = [freshEmail(), freshEmail(), freshEmail()];
      const created: Json[] = [];
      for (const email of emails) {
        created.push(await invite(background, admin, org, email));
      }
      // No Graphile worker runs in tests (WORKER_ENABLED=false): only the timer can send these.
      const deadline = Date.now() + 10_000;
      const allSent = async () => {
        const statuses = await Promise.all(created.map(async (c) => (await rowOf(background, c.emailDelivery.id)).status));
        return statuses.every((s) => s === 'sent');
      };
      // Received by the SMTP server, then recorded as sent (the row is written after the server's 250).
      while (!emails.every((e) => smtp.received.some((m) => m.to.includes(e))) || !(await allSent())) {
        if (Date.now() > deadline) {
          throw new Error('the background worker did not send the emails');
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const e of emails) {
        expect(smtp.received.filter((m) => m.to.includes(e))).toHaveLength(1);
      }
      const started = Date.now();
      await background.close();
      closed = true;
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      if (!closed) {
        await background.close();
      }
    }
  });
});
