import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request as the receiver saw it. */
export type ReceivedRequest = {
  /** The endpoint name: the first path segment after `/hooks/`. */
  endpoint: string;
  webhookId: string;
  /** performance.timeOrigin + performance.now() when the body had arrived (ms, sub-ms precision). */
  arrivedAt: number;
  /** The `standardwebhooks` library accepted the signature (and timestamp) with the endpoint's secret. */
  verified: boolean;
  /** Why verification failed, when it did. */
  error?: string;
  /** The parsed body, when it verified. */
  payload?: unknown;
};

/** How to answer one request: a status after `delayMs`, or hold it until `release()`. */
export type Reply = { status?: number; delayMs?: number; hold?: boolean };

export type ReplyPolicy = (request: ReceivedRequest) => Reply;

export type Receiver = {
  /** The URL an endpoint named `name` delivers to. */
  url: (name: string) => string;
  /** Registers an endpoint's signing secret (`whsec_...`). */
  addEndpoint: (name: string, secret: string) => void;
  /** Every request in arrival order, duplicates included. */
  requests: ReceivedRequest[];
  /**
   * What a receiver that deduplicates on webhook-id processes: per endpoint, each verified
   * webhook-id once (the first arrival), in arrival order.
   */
  processed: (endpoint: string) => string[];
  /** Requests received (body read) and not yet answered. */
  inFlight: () => number;
  /** webhook-ids of the requests currently in flight, as `endpoint/id`. */
  inFlightIds: () => string[];
  setPolicy: (policy: ReplyPolicy) => void;
  /** Answers every held request with `status` (default 200). */
  release: (status?: number) => void;
  close: () => Promise<void>;
};

const now = () => performance.timeOrigin + performance.now();

/**
 * A local webhook receiver on 127.0.0.1 that verifies every delivery with the `standardwebhooks`
 * npm package (a verifier nobody here wrote) and records webhook-ids, for the reliability tests.
 * Answers 200 unless the policy says otherwise.
 */
export async function startReceiver(): Promise<Receiver> {
  const secrets = new Map<string, Webhook>();
  const requests: ReceivedRequest[] = [];
  const seen = new Map<string, Set<string>>();
  const processedOrder = new Map<string, string[]>();
  const open = new Map<http.ServerResponse, string>();
  const held = new Set<http.ServerResponse>();
  let policy: ReplyPolicy = () => ({ status: 200 });

  const answer = (res: http.ServerResponse, status: number) => {
    open.delete(res);
    held.delete(res);
    if (!res.writableEnded && !res.destroyed) {
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
    }
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const endpoint = /^\/hooks\/([^/?]+)/.exec(req.url ?? '')?.[1] ?? '';
      const headers: Record<string, string> = {};
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const value = req.headers[name];
        headers[name] = typeof value === 'string' ? value : '';
      }
      const webhookId = headers['webhook-id'] ?? '';
      const request: ReceivedRequest = { endpoint, webhookId, arrivedAt: now(), verified: false };
      const hook = secrets.get(endpoint);
      if (!hook) {
        request.error = `unknown endpoint ${endpoint}`;
      } else {
        try {
          request.payload = hook.verify(body, headers);
          request.verified = true;
        } catch (error) {
          request.error = (error as Error).message;
        }
      }
      requests.push(request);
      if (request.verified) {
        let ids = seen.get(endpoint);
        if (!ids) {
          ids = new Set();
          seen.set(endpoint, ids);
          processedOrder.set(endpoint, []);
        }
        if (!ids.has(webhookId)) {
          ids.add(webhookId);
          processedOrder.get(endpoint)?.push(webhookId);
        }
      }
      open.set(res, `${endpoint}/${webhookId}`);
      // The sender gave up (timeout) or died: the request is no longer in flight.
      res.on('close', () => {
        open.delete(res);
        held.delete(res);
      });
      if (!request.verified) {
        answer(res, 400);
        return;
      }
      const reply = policy(request);
      if (reply.hold) {
        held.add(res);
        return;
      }
      const status = reply.status ?? 200;
      if (reply.delayMs && reply.delayMs > 0) {
        setTimeout(() => answer(res, status), reply.delayMs);
      } else {
        answer(res, status);
      }
    });
  });
  // Slow answers must not be cut off by Node's own server timeouts.
  server.requestTimeout = 0;
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: (name) => `http://127.0.0.1:${port}/hooks/${name}`,
    addEndpoint: (name, secret) => {
      secrets.set(name, new Webhook(secret));
    },
    requests,
    processed: (endpoint) => [...(processedOrder.get(endpoint) ?? [])],
    inFlight: () => open.size,
    inFlightIds: () => [...open.values()],
    setPolicy: (next) => {
      policy = next;
    },
    release: (status = 200) => {
      for (const res of [...held]) {
        answer(res, status);
      }
    },
    close: async () => {
      for (const res of [...open.keys()]) {
        res.destroy();
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
