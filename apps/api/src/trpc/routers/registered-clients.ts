import { ZRegisteredClientList } from '@svc/contracts/registered-clients';
import { z } from 'zod';
import { registeredClientList } from '../../modules/oidc-provider/registered-clients.ts';
import { router } from '../init.ts';
import { platformProcedure } from '../procedures.ts';

export const registeredClientsRouter = router({
  list: platformProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/platform/registered-clients',
        tags: ['platform'],
        summary: 'Clients that registered themselves (dynamic client registration), newest first',
        description:
          'Platform admins only (session cookie; anyone else signed in gets the same 403, an API key 403). What each client said about itself (never its secret), when it registered, when a token was last issued to it and when it is deleted unless one is (docs/oidc.md "Dynamic client registration").',
      },
    })
    .input(z.void())
    .output(ZRegisteredClientList)
    .query(({ ctx }) => registeredClientList(ctx.services.db, ctx.services.config.oidc.dynamicRegistration)),
});
