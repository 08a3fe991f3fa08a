import { ZClientConfigRequest, ZClientConfigResponse } from '@svc/contracts/public-edge';
import { clientConfigOf } from '../../modules/client-config/service.ts';
import { router } from '../init.ts';
import { publishableKeyProcedure } from '../procedures.ts';

export const clientConfigRouter = router({
  get: publishableKeyProcedure
    .meta({
      publicCors: true,
      openapi: {
        method: 'GET',
        path: '/client/config',
        tags: ['public'],
        summary: 'Public configuration of an application by publishable key (or keyless=1)',
        description:
          'Send the publishable key as the X-SVC-Publishable-Key header or the publishable_key query parameter; keyless=1 returns the keyless development application. No Authorization header.',
      },
    })
    .input(ZClientConfigRequest)
    .output(ZClientConfigResponse)
    .query(({ ctx }) => clientConfigOf(ctx.services.config, ctx.services.secretBox, ctx.resolved)),
});
