import type { ServerResponse } from 'node:http';
import { AppError } from '@svc/contracts/errors';
import { ZExportDownloadQuery, ZExportId } from '@svc/contracts/exports';
import type { Sql } from '@svc/db/client';
import { EXPORT_SECTIONS, exportSectionRows } from '@svc/db/queries/exports';
import express, { type Request, type Response } from 'express';
import type { AppServices } from '../../context.ts';
import { requestIdOf, sendError } from '../../http/errors.ts';
import { principalOf } from '../access/principal.ts';
import { NO_SESSION_MESSAGE } from '../auth/current-session.ts';
import { contentTypeOf, downloadFilename, serializerFor } from './serialize.ts';
import { type ExportDownload, prepareDownload } from './service.ts';

/** Rows per cursor fetch: one batch is all a download holds of a table at a time. */
export const EXPORT_CURSOR_BATCH = 1_000;
/** Bytes gathered before a write: fewer, larger writes; still a small, bounded buffer. */
const CHUNK_CHARS = 64 * 1024;
/** A client that reads nothing for this long is cut off: it must not hold a connection and a snapshot for ever. */
const DRAIN_TIMEOUT_MS = 120_000;
/**
 * Downloads streaming at once in one API process. Each holds one database connection (a
 * read-only transaction with its cursor) for as long as the client reads; more would starve the
 * pool the API itself needs. The next one is told to retry (503 with Retry-After).
 */
export const MAX_CONCURRENT_DOWNLOADS = 4;

/** The client went away (or stalled): stop reading, release the cursor. */
class DownloadAborted extends Error {}

/**
 * Gathers output into chunks and writes them with backpressure: when `res.write` says the
 * socket's buffer is full, the download waits for 'drain' before it reads the next batch, so
 * memory stays bounded by the chunk size and the socket's buffer whatever the client's speed.
 */
export class Sink {
  #parts: string[] = [];
  #size = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly gone: AbortSignal,
  ) {}

  add(text: string): void {
    if (text.length > 0) {
      this.#parts.push(text);
      this.#size += text.length;
    }
  }

  get full(): boolean {
    return this.#size >= CHUNK_CHARS;
  }

  async flush(): Promise<void> {
    if (this.gone.aborted) {
      throw new DownloadAborted('the client went away');
    }
    if (this.#size === 0) {
      return;
    }
    const chunk = this.#parts.join('');
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
 * Writes the whole export to `sink`: the captured sections from the record, the table sections
 * through one cursor each, all inside one read-only REPEATABLE READ transaction (every table
 * section seen in one state), `EXPORT_CURSOR_BATCH` rows at a time. Leaving the loop (the client
 * went away, a write failed) closes the cursor and ends the transaction.
 */
export async function writeExport(pg: Sql, download: ExportDownload, sink: Sink): Promise<void> {
  const serializer = serializerFor(download.format);
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
  await pg.begin('isolation level repeatable read read only', async (tx) => {
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
        const rows = exportSectionRows(tx, section, { tenantId: record.tenantId, asOf: record.asOf, batch: EXPORT_CURSOR_BATCH });
        for await (const batch of rows) {
          for (const row of batch) {
            sink.add(serializer.row(section, row.j, empty));
            empty = false;
          }
          // Once per batch: the next batch is fetched only after this one is handed to the socket.
          await sink.flush();
        }
      }
      sink.add(serializer.sectionEnd(section, empty));
    }
  });
  sink.add(serializer.end());
  await sink.flush();
}

/**
 * GET /v1/exports/{id}/download (SPEC.md 4.8). A plain Express route, because a procedure
 * cannot stream (ARCHITECTURE.md 3); mounted before `/v1`. The same callers as the export's
 * procedures (session cookie or tenant API key, `exports.create`, org admins) and the same
 * answers: 401, 404 for another organization's export, 403, then 409 export_not_ready or
 * export_failed. The edge has already applied the rate limit. The body is JSON or CSV
 * (serialize.ts), an attachment, never cached.
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
      if (error instanceof AppError) {
        sendError(req, res, error.code, error.message);
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
    res.setHeader('Content-Type', contentTypeOf(download.format));
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
