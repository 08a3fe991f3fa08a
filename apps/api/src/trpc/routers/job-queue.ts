import { ZJobQueueOverview } from '@svc/contracts/job-queue';
import { z } from 'zod';
import { jobQueueOverview } from '../../modules/job-queue/service.ts';
import { router } from '../init.ts';
import { platformProcedure } from '../procedures.ts';

export const jobQueueRouter = router({
  overview: platformProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/platform/jobs',
        tags: ['platform'],
        summary: 'The job queue: counts per task and state, oldest waiting job, recent failures, locked jobs',
        description:
          "Platform admins only (session cookie; anyone else signed in gets the same 403, an API key 403). Read from Graphile Worker's tables; payloads are never returned, last_error is truncated to 500 characters with secret-shaped values masked.",
      },
    })
    .input(z.void())
    .output(ZJobQueueOverview)
    .query(({ ctx }) => jobQueueOverview(ctx.services.db)),
});
