import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ParsedUrlQuery } from 'node:querystring';
import type { TAgentContextResponse } from '@svc/contracts/agent-context';
import { Router } from 'express';
import type { AppServices } from '../context.ts';
import { buildLlmsTxt, renderAgentContextMarkdown } from '../modules/setup/documents.ts';
import { resolveFormat } from '../modules/setup/service.ts';

/**
 * A strong entity tag of an answer's bytes: the same context gives the same tag on every process,
 * and any change to what the context says (an application's redirect URLs, its name, svc's
 * public URL, the prompt text of a new release) gives another one.
 */
export function entityTag(body: string): string {
  return `"${createHash('sha256').update(body, 'utf8').digest('base64url').slice(0, 27)}"`;
}

/**
 * If-None-Match as RFC 9110 13.1.2 has an origin server evaluate it: `*`, or any listed tag equal
 * to `tag` under weak comparison. Not Express's `req.fresh`, which answers in full whenever the
 * request also says `Cache-Control: no-cache`, as fetch() does on every conditional request.
 */
export function noneMatch(header: string | undefined, tag: string): boolean {
  if (!header) {
    return false;
  }
  if (header.trim() === '*') {
    return true;
  }
  const opaque = tag.replace(/^W\//, '');
  return (header.match(/(?:W\/)?"[^"]*"/g) ?? []).some((t) => t.replace(/^W\//, '') === opaque);
}

const MARKDOWN = 'text/markdown; charset=utf-8';

/**
 * GET /v1/setup/agent-context's answer (the procedure's `answer` meta, trpc/routers/setup.ts). The procedure
 * stays the one definition and answers through the /v1 adapter as every route does (key
 * resolution, validation, errors, including 400 `unsupported_format`); its 200 is written here as
 * asked: JSON or Markdown, with an ETag of those bytes and `Cache-Control: no-cache`, so an agent
 * revalidates with If-None-Match and gets 304 until the context changes.
 */
export function answerAgentContext(req: IncomingMessage & { query?: ParsedUrlQuery }, res: ServerResponse, data: unknown): void {
  const raw = req.query?.format;
  // The procedure accepted the format already.
  const format = resolveFormat(typeof raw === 'string' ? raw : undefined);
  const context = data as TAgentContextResponse;
  const body = format === 'markdown' ? renderAgentContextMarkdown(context) : JSON.stringify(context);
  const tag = entityTag(body);
  res.setHeader('ETag', tag);
  res.setHeader('Cache-Control', 'no-cache');
  const vary = res.getHeader('Vary');
  res.setHeader('Vary', vary ? `${String(vary)}, X-SVC-Publishable-Key` : 'X-SVC-Publishable-Key');
  if (noneMatch(req.headers['if-none-match'], tag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', format === 'markdown' ? MARKDOWN : 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/** GET /llms.txt. */
export function llmsTxtRouter(services: AppServices): Router {
  const body = buildLlmsTxt(services.config.publicUrl, services.config.keylessEnabled);
  const tag = entityTag(body);
  const r = Router();
  r.get('/llms.txt', (req, res) => {
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('ETag', tag);
    res.setHeader('Cache-Control', 'no-cache');
    if (noneMatch(req.headers['if-none-match'], tag)) {
      res.status(304).end();
      return;
    }
    res.send(body);
  });
  return r;
}
