import { ZAgentContextRequest, ZAgentContextResponse } from '@svc/contracts/agent-context';
import { router } from '../../trpc/init.ts';
import { publishableKeyProcedure } from '../../trpc/procedures.ts';
import { buildAgentContext } from './service.ts';

export const setupRouter = router({
  agentContext: publishableKeyProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/setup/agent-context',
        tags: ['public'],
        summary: 'Setup context for coding agents and IDEs (never contains a secret)',
        description:
          'Query publishable_key (or the X-SVC-Publishable-Key header, or keyless=1) and framework: nextjs, react, express, fastapi, django, flask, laravel, rails or rest.',
      },
    })
    .input(ZAgentContextRequest)
    .output(ZAgentContextResponse)
    .query(({ ctx, input }) => {
      const { application, organization } = ctx.resolved.found;
      return buildAgentContext({
        publicUrl: ctx.services.config.publicUrl,
        engine: ctx.services.config.engine,
        application,
        organization,
        keyless: ctx.resolved.keyless,
        framework: input.framework,
      });
    }),
});
