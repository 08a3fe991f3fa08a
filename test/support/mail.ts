import http from 'node:http';
import type { AddressInfo } from 'node:net';
import PostalMime from 'postal-mime';
import { SMTPServer } from 'smtp-server';

/** One email as a real SMTP server received it, parsed by postal-mime. */
export type ReceivedEmail = {
  envelopeFrom: string;
  envelopeTo: string[];
  messageId: string;
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** The raw message, for "never contains" checks. */
  raw: string;
  /** Whether the client authenticated, and as whom. */
  user: string | null;
};

export type SmtpCapture = {
  /** smtp://127.0.0.1:<port> (no credentials; add them for an AUTH test). */
  url: string;
  port: number;
  received: ReceivedEmail[];
  /**
   * Decides each message once its data has arrived (`n` counts messages since this call): null
   * accepts it, a refusal answers `code` (451 by default: a temporary failure) and its text.
   */
  refuse: (decide: ((n: number) => { code?: number; message: string } | null) | null) => void;
  /** Resolves when `count` emails have been accepted in total. */
  waitFor: (count: number, timeoutMs?: number) => Promise<ReceivedEmail[]>;
  close: () => Promise<void>;
};

/**
 * A real SMTP server (the `smtp-server` package) on a free loopback port: accepts any sender and
 * recipient, takes AUTH PLAIN/LOGIN with any password (recording the user), no TLS.
 */
export async function startSmtpCapture(): Promise<SmtpCapture> {
  const received: ReceivedEmail[] = [];
  let decide: ((n: number) => { code?: number; message: string } | null) | null = null;
  let attempts = 0;
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const n = ++attempts;
        const refusal = decide?.(n) ?? null;
        if (refusal) {
          const error = Object.assign(new Error(refusal.message), { responseCode: refusal.code ?? 451 });
          callback(error);
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        void PostalMime.parse(raw).then((parsed) => {
          received.push({
            envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            envelopeTo: session.envelope.rcptTo.map((r) => r.address),
            messageId: parsed.messageId ?? '',
            from: parsed.from?.address ?? '',
            to: (parsed.to ?? []).map((t) => t.address ?? ''),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: parsed.html ?? '',
            raw,
            user: typeof session.user === 'string' ? session.user : null,
          });
          for (const w of waiters.splice(0)) {
            w();
          }
          callback();
        }, callback);
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    received,
    refuse: (fn) => {
      decide = fn;
      attempts = 0;
    },
    waitFor: async (count, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${count} emails (got ${received.length})`);
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 100);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      return received;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** How the fake Resend API answers one request (after `delayMs`, when given). */
export type ResendReply = { status: number; body: unknown; delayMs?: number };

/** One request the fake Resend API received. */
export type RecordedRequest = { method: string; path: string; headers: http.IncomingHttpHeaders; body: string; json: unknown };

export type ResendRecorder = {
  /** http://127.0.0.1:<port>: RESEND_BASE_URL. */
  url: string;
  requests: RecordedRequest[];
  /** How to answer the next requests (default: 200 with a fresh `id`). */
  answer: (fn: ((n: number, req: RecordedRequest) => ResendReply) | null) => void;
  close: () => Promise<void>;
};

/**
 * Stands in for the one thing that cannot exist here, Resend's hosted API: a local HTTP server
 * that records what the official SDK sends and answers like Resend (`{ id }`, or an error body).
 */
export async function startResendRecorder(): Promise<ResendRecorder> {
  const requests: RecordedRequest[] = [];
  let answer: ((n: number, req: RecordedRequest) => ResendReply) | null = null;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        // Not JSON: recorded as text.
      }
      const recorded: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, json };
      requests.push(recorded);
      const reply = answer?.(requests.length, recorded) ?? {
        status: 200,
        body: { id: `re_${requests.length}_${Math.random().toString(36).slice(2, 10)}` },
      };
      setTimeout(() => {
        res.writeHead(reply.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply.body));
      }, reply.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    answer: (fn) => {
      answer = fn;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
