import {
  ZEmailDeliveryPage,
  ZListEmailDeliveriesRequest,
  ZProcessEmailDeliveriesRequest,
  ZProcessEmailDeliveriesResponse,
} from '@svc/contracts/email-deliveries';
import { emailOutboxOf } from '../../modules/email-deliveries/outbox.ts';
import { listEmailDeliveries, processEmailDeliveriesNow } from '../../modules/email-deliveries/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

export const emailDeliveriesRouter = router({
  list: controlProcedure
    .meta({
      access: { permission: 'email.read', organization: 'slug', adminOnly: true },
      openapi: {
        method: 'GET',
        path: '/email-deliveries',
        tags: ['email'],
        summary: "List an organization's invitation emails (sanitized: never the body or the provider's answers)",
      },
    })
    .input(ZListEmailDeliveriesRequest)
    .use(resolveAccess)
    .output(ZEmailDeliveryPage)
    .query(({ ctx, input }) => listEmailDeliveries(ctx.services.db, ctx.access, input)),
  process: controlProcedure
    .meta({
      access: { permission: 'email.process', organization: 'slug', adminOnly: true },
      errors: ['email_delivery_disabled'],
      openapi: {
        method: 'POST',
        path: '/email-deliveries/process',
        tags: ['email'],
        summary: 'Send due (or the selected) invitation emails now; 409 email_delivery_disabled without a provider',
      },
    })
    .input(ZProcessEmailDeliveriesRequest)
    .use(resolveAccess)
    .output(ZProcessEmailDeliveriesResponse)
    .mutation(({ ctx, input }) =>
      processEmailDeliveriesNow(
        ctx.services.db,
        emailOutboxOf(ctx.services),
        ctx.services.config.email.worker.batchSize,
        ctx.access,
        ctx.request,
        input,
      ),
    ),
});
