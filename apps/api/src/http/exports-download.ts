import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { AppError } from '@svc/contracts/errors';
import { ZExportDownloadQuery, ZExportId } from '@svc/contracts/exports';
import type { Sql } from '@svc/db/client';
import { EXPORT_SECTIONS, exportSectionCopySql } from '@svc/db/queries/exports';
import express, { type Request, type Response } from 'express';
import type { TransactionSql } from 'postgres';
import type { AppServices } from '../context.ts';
import { principalOf } from '../modules/access/principal.ts';
import { NO_SESSION_MESSAGE } from '../modules/auth/current-session.ts';
import { CopyBinaryRows } from '../modules/exports/copy-binary.ts';
import { downloadFilename, EXPORT_FORMATS } from '../modules/exports/serialize.ts';
import { type ExportDownload, prepareDownload } from '../modules/exports/service.ts';
import { requestIdOf } from '../modules/shared/request-id.ts';
import { asAppError, sendAppError, sendError } from './errors.ts';

/**
 * Bytes gathered before a write: fewer, larger writes, and a small bounded buffer whatever the
 * client's speed.
 */
const CHUNK_BYTES = 64 * 1024;
/** A client that reads nothing for this long is cut off: it must not hold a connection and a snapshot for ever. */
const DRAIN_TIMEOUT_MS = 120_000;
/**
 * Downloads streaming at once in one API process. Each holds one database connection (a
 * read-only transaction running its COPY) for as long as the client reads; more would starve
 * the pool the API itself needs. The next one is told to retry (503 with Retry-After).
 */
export const MAX_CONCURRENT_DOWNLOADS = 4;

/** The client went away (or stalled): stop PostgreSQL, release the connection. */
class DownloadAborted extends Error {}

/**
 * Gathers output into chunks and writes them with backpressure: when `res.write` says the
 * socket's buffer is full, the download pauses the database stream until 'drain', so memory
 * stays bounded by the chunk size and the socket's buffer whatever the client's speed.
 */
export class Sink {
  #parts: Buffer[] = [];
  #size = 0;

  constructor(
    private readonly res: ServerResponse,
    /** Aborted when the client goes away. */
    readonly gone: AbortSignal,
  ) {}

  add(text: string): void {
    if (text.length > 0) {
      this.addBytes(Buffer.from(text, 'utf8'));
    }
  }

  /** `bytes` is written as is (a view into a chunk postgres.js read is fine: nothing rewrites those), not copied until the flush. */
  addBytes(bytes: Buffer): void {
    this.#parts.push(bytes);
    this.#size += bytes.length;
  }

  get full(): boolean {
    return this.#size >= CHUNK_BYTES;
  }

  async flush(): Promise<void> {
    if (this.gone.aborted) {
      throw new DownloadAborted('the client went away');
    }
    if (this.#size === 0) {
      return;
    }
    const chunk = this.#parts.length === 1 ? (this.#parts[0] as Buffer) : Buffer.concat(this.#parts, this.#size);
    this.#parts = [];
    this.#size = 0;
    if (!this.res.write(chunk)) {
      await this.#drained();
    }
  }

  #drained(): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        this.res.off('drain', onDrain);
        this.gone.removeEventListener('abort', onGone);
        if (error) {
          reject(error);
        } else {
          resolve();
        }
      };
      const onDrain = () => done();
      const onGone = () => done(new DownloadAborted('the client went away'));
      const timer = setTimeout(
        () => done(new DownloadAborted(`the client read nothing for ${DRAIN_TIMEOUT_MS / 1000} s`)),
        DRAIN_TIMEOUT_MS,
      );
      this.res.once('drain', onDrain);
      this.gone.addEventListener('abort', onGone, { once: true });
    });
  }
}

/**
 * Runs one section's COPY and hands each row's bytes to `sink` (after `prefix`), pausing the
 * COPY whenever the sink waits for the client (postgres.js then stops reading the socket, and
 * PostgreSQL blocks on its send: nothing is read ahead).
 *
 * On a failure of ours (the client gone or stalled, a malformed stream) the COPY is cancelled
 * (`cancel`) and what PostgreSQL already sent is read and dropped until postgres.js closes the
 * stream (on the cancel's error, or on the COPY's end if it had finished). Only when both are
 * done does the failure reach the transaction's ROLLBACK: postgres.js refuses any query while a
 * COPY is open on the connection, and a cancel still on its way must not land on the ROLLBACK.
 * An error of the COPY itself arrives with its stream already closed.
 */
async function pumpCopy(opts: {
  tx: TransactionSql;
  copySql: string;
  sink: Sink;
  prefix: { first: Buffer; next: Buffer };
  cancel: () => Promise<void>;
}): Promise<number> {
  const { sink, prefix } = opts;
  const stream = (await opts.tx.unsafe(opts.copySql).readable()) as Readable;
  const rows = new CopyBinaryRows();
  let count = 0;
  const onRow = (value: Buffer) => {
    const before = count === 0 ? prefix.first : prefix.next;
    if (before.length > 0) {
      sink.addBytes(before);
    }
    sink.addBytes(value);
    count++;
  };
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) {
        return;
      }
      failed = true;
      sink.gone.removeEventListener('abort', onGone);
      stream.off('data', onData);
      if (stream.destroyed) {
        reject(error);
        return;
      }
      const closed = new Promise((done) => stream.once('close', done));
      // Read on (and drop) so that postgres.js reaches the cancel's error or the COPY's end.
      stream.on('data', () => {});
      stream.resume();
      void Promise.all([opts.cancel().catch(() => {}), closed]).then(() => reject(error));
    };
    const onData = (chunk: Buffer) => {
      try {
        rows.push(chunk, onRow);
      } catch (error) {
        fail(error);
        return;
      }
      if (sink.full) {
        stream.pause();
        sink.flush().then(() => {
          if (!failed) {
            stream.resume();
          }
        }, fail);
      }
    };
    // Not only at the next flush: PostgreSQL may be a while before its first row (a sort).
    const onGone = () => fail(new DownloadAborted('the client went away'));
    if (sink.gone.aborted) {
      onGone();
      return;
    }
    sink.gone.addEventListener('abort', onGone, { once: true });
    stream.on('data', onData);
    stream.on('error', fail);
    stream.on('end', () => {
      if (!failed) {
        if (rows.ended) {
          sink.gone.removeEventListener('abort', onGone);
          resolve();
        } else {
          fail(new Error('the COPY stream ended early'));
        }
      }
    });
  });
  return count;
}

/**
 * Writes the whole export to `sink`: the captured sections from the record, each table section
 * through its own COPY (queries/exports.ts exportSectionCopySql), all inside one read-only
 * REPEATABLE READ transaction (every table section seen in one state).
 */
export async function writeExport(pg: Sql, download: ExportDownload, sink: Sink): Promise<void> {
  const { serializer, copyRow } = EXPORT_FORMATS[download.format];
  const { record } = download;
  sink.add(
    serializer.begin({
      id: record.id,
      organizationId: record.tenantId,
      asOf: record.asOf.toISOString(),
      createdAt: record.createdAt.toISOString(),
      completedAt: record.completedAt?.toISOString() ?? null,
      counts: record.counts,
    }),
  );
  const where = { tenantId: record.tenantId, asOf: record.asOf };
  await pg.begin('isolation level repeatable read read only', async (tx) => {
    // The backend a COPY runs in, to cancel it from the pool (pg_cancel_backend: only a query
    // that is running is cancelled; a backend idle in the transaction ignores it).
    const [backend] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
    if (!backend) {
      throw new Error('pg_backend_pid() returned no row');
    }
    const cancel = async () => {
      await pg`select pg_cancel_backend(${backend.pid}::int)`;
    };
    for (const section of EXPORT_SECTIONS) {
      sink.add(serializer.sectionStart(section));
      let empty = true;
      if (section.source === 'snapshot') {
        for (const item of download.snapshot[section.key] ?? []) {
          sink.add(serializer.item(section, item as Record<string, unknown>, empty));
          empty = false;
          if (sink.full) {
            await sink.flush();
          }
        }
      } else {
        const copySql = exportSectionCopySql(section, { ...where, ...copyRow });
        const prefix = { first: Buffer.from(serializer.rowPrefix(section, true)), next: Buffer.from(serializer.rowPrefix(section, false)) };
        empty = (await pumpCopy({ tx, copySql, sink, prefix, cancel })) === 0;
      }
      sink.add(serializer.sectionEnd(section, empty));
    }
  });
  sink.add(serializer.end());
  await sink.flush();
}

/**
 * GET /v1/exports/{id}/download (docs/api.md "Exports"). A plain Express route, because a procedure
 * cannot stream (docs/architecture.md section 3); mounted before `/v1`. The same callers as the export's
 * procedures (session cookie or tenant API key, `exports.create`, org admins) and the same
 * answers: 401, 404 for another organization's export, 403, then 409 export_not_ready or
 * export_failed. The edge has already applied the rate limit. The body is JSON or CSV
 * (modules/exports/serialize.ts), an attachment, never cached.
 */
export function exportDownloadRouter(services: AppServices): express.Router {
  const router = express.Router();
  let streaming = 0;

  router.get('/v1/exports/:id/download', async (req: Request, res: Response) => {
    res.setHeader('Cache-Control', 'no-store');
    let download: ExportDownload;
    try {
      const principal = await principalOf(services, req);
      if (!principal) {
        throw new AppError('unauthenticated', NO_SESSION_MESSAGE);
      }
      const id = ZExportId.safeParse(req.params.id);
      const query = ZExportDownloadQuery.safeParse(req.query);
      if (!id.success || !query.success) {
        throw new AppError(
          'validation_failed',
          !id.success ? 'expected an export id (exp_...)' : 'format is json or csv; organization_slug is a slug',
        );
      }
      download = await prepareDownload(services.db, principal, { id: id.data, ...query.data });
    } catch (error) {
      const appError = asAppError(error);
      if (appError) {
        sendAppError(req, res, appError, services.config);
        return;
      }
      services.logger.error({ err: error, requestId: requestIdOf(req) }, 'export download failed');
      sendError(req, res, 'internal', 'Internal server error');
      return;
    }
    if (streaming >= MAX_CONCURRENT_DOWNLOADS) {
      res.setHeader('Retry-After', '5');
      sendError(req, res, 'service_unavailable', 'too many export downloads are streaming on this server; retry in a few seconds');
      return;
    }
    res.status(200);
    res.setHeader('Content-Type', EXPORT_FORMATS[download.format].contentType);
    res.setHeader(
      'Content-Disposition',
      `attachment; filename="${downloadFilename({ slug: download.organization.slug, id: download.record.id, format: download.format })}"`,
    );
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) {
        gone.abort();
      }
    });
    streaming++;
    try {
      await writeExport(services.sql, download, new Sink(res, gone.signal));
      res.end();
    } catch (error) {
      if (!(error instanceof DownloadAborted)) {
        services.logger.error({ err: error, requestId: requestIdOf(req), exportId: download.record.id }, 'export download broke off');
      }
      // The status line is sent: only a cut connection tells the client the file is incomplete
      // (no final chunk), rather than a short file that looks whole.
      res.destroy();
    } finally {
      streaming--;
    }
  });
  return router;
}
