import { ZServiceConfigResponse } from '@svc/contracts/public-edge';
import { z } from 'zod';
import { describeService } from '../../modules/service/service.ts';
import { publicProcedure, router } from '../init.ts';

export const serviceRouter = router({
  config: publicProcedure
    .meta({
      publicCors: true,
      auth: 'none',
      openapi: {
        method: 'GET',
        path: '/config',
        tags: ['public'],
        summary: 'Service-level configuration (legacy; new integrations use /v1/client/config)',
      },
    })
    .input(z.void())
    .output(ZServiceConfigResponse)
    .query(({ ctx }) => describeService(ctx.services.config)),
});
