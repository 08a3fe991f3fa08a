import { ZBackendApplicationResponse } from '@svc/contracts/public-edge';
import { z } from 'zod';
import { describeBackendApplication } from '../../modules/backend/service.ts';
import { router } from '../init.ts';
import { secretKeyProcedure } from '../procedures.ts';

export const backendRouter = router({
  application: secretKeyProcedure
    .meta({
      rateLimit: 'backend',
      openapi: {
        method: 'GET',
        path: '/backend/application',
        tags: ['backend'],
        summary: 'Check a secret key: the application and organization it belongs to',
      },
    })
    .input(z.void())
    .output(ZBackendApplicationResponse)
    .query(({ ctx }) => describeBackendApplication(ctx.application)),
});
