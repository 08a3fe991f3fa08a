import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * Real HTTP receivers for the webhook tests: node:http servers on this machine that record what
 * reached them and answer the way the test asks (succeed, fail, hang, redirect, flood).
 */

export type ReceivedRequest = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string };

export type Receiver = {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** TCP connections accepted (keep-alive reuse shows as fewer connections than requests). */
  connections: () => number;
  /** The most requests that were open (arrived, not yet answered or abandoned) at one time. */
  maxOpen: () => number;
  /** Resolves once `n` requests have arrived in full. */
  waitForRequests: (n: number, timeoutMs?: number) => Promise<void>;
  close: () => Promise<void>;
};

export type Respond = (req: ReceivedRequest, res: http.ServerResponse) => void;

/**
 * Starts a receiver on `host` (default 127.0.0.1; `::` listens on IPv6 and IPv4). `respond` runs
 * once the request body has arrived.
 */
export async function startReceiver(respond: Respond = (_req, res) => res.end('ok'), host = '127.0.0.1'): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let open = 0;
  let maxOpen = 0;
  const listeners = new Set<() => void>();
  const server = http.createServer((req, res) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(received);
      for (const l of listeners) {
        l();
      }
      respond(received, res);
    });
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    connections: () => connections,
    maxOpen: () => maxOpen,
    waitForRequests: (n, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (requests.length >= n) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`receiver got ${requests.length} of ${n} requests within ${timeoutMs} ms`));
        }, timeoutMs);
        listeners.add(check);
        check();
      }),
    close: async () => {
      for (const socket of sockets) {
        socket.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers 200 with headers, then writes 16 KiB chunks until the client goes away. */
export function endlessBody(status: number): Respond {
  const chunk = Buffer.alloc(16 * 1024, 'x');
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain' });
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) {
        // keep writing while the socket takes it
      }
      if (!res.destroyed) {
        res.once('drain', pump);
      }
    };
    res.on('error', () => {});
    pump();
  };
}

/** Never answers (the request stays open until the client gives up). */
export const hang: Respond = () => {};
