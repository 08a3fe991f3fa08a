import { ZMeResponse } from '@svc/contracts/me';
import { z } from 'zod';
import { router } from '../../trpc/init.ts';
import { sessionProcedure } from '../../trpc/procedures.ts';
import { describeMe } from './service.ts';

export const meRouter = router({
  get: sessionProcedure
    .meta({ openapi: { method: 'GET', path: '/me', tags: ['session'], summary: 'The signed-in user, memberships and active workspace' } })
    .input(z.void())
    .output(ZMeResponse)
    .query(({ ctx }) => describeMe(ctx.current)),
});
