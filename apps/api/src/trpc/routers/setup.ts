import { ZAgentContextRequest, ZAgentContextResponse } from '@svc/contracts/agent-context';
import { z } from 'zod';
import { answerAgentContext } from '../../http/agent-context.ts';
import { claimUrlOf } from '../../modules/client-config/service.ts';
import { loadAgentContext, resolveFormat } from '../../modules/setup/service.ts';
import { router } from '../init.ts';
import { publishableKeyProcedure } from '../procedures.ts';

export const setupRouter = router({
  agentContext: publishableKeyProcedure
    .meta({
      publicCors: true,
      openapi: {
        method: 'GET',
        path: '/setup/agent-context',
        tags: ['public'],
        summary: 'Setup context for coding agents and IDEs (never contains a secret)',
        description:
          'Query publishable_key (or the X-SVC-Publishable-Key header, or keyless=1), framework: nextjs, react, express, fastapi, django, flask, laravel, rails or rest, and format: json (default) or markdown (the same content as one Markdown document, text/markdown; charset=utf-8). Every 200 carries an ETag of its bytes (Cache-Control: no-cache): sent back as If-None-Match, it answers 304 with no body until the context changes, e.g. when the application redirect URLs change. GET /llms.txt links the context of each framework.',
        successDescription: 'The setup context: JSON (AgentContext), or Markdown with format=markdown. Not modified: 304.',
        responseHeaders: z.object({
          ETag: z.string().describe('strong entity tag of this answer; send it as If-None-Match to revalidate'),
          'Cache-Control': z.literal('no-cache'),
        }),
      },
      answer: answerAgentContext,
      errors: ['unsupported_framework', 'unsupported_format'],
    })
    .input(ZAgentContextRequest)
    .output(ZAgentContextResponse)
    .query(({ ctx, input }) => {
      // JSON over tRPC; on /v1 answerAgentContext writes JSON or Markdown, after this check.
      resolveFormat(input.format);
      const { application, organization } = ctx.resolved.found;
      return loadAgentContext(ctx.services.db, {
        publicUrl: ctx.services.config.publicUrl,
        engine: ctx.services.config.engine,
        application: { ...application, claimUrl: claimUrlOf(ctx.services.config, ctx.services.secretBox, ctx.resolved) },
        organization,
        keyless: ctx.resolved.keyless,
        framework: input.framework,
      });
    }),
});
