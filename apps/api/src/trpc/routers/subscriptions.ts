import {
  ZCreateSubscriptionPlanRequest,
  ZGetSubscriptionRequest,
  ZListSubscriptionPlansRequest,
  ZSubscription,
  ZSubscriptionPlan,
  ZSubscriptionPlanPage,
  ZUpdateSubscriptionPlanRequest,
  ZUpdateSubscriptionRequest,
} from '@svc/contracts/subscriptions';
import { createPlan, getSubscription, listPlans, updatePlan, updateSubscriptionFor } from '../../modules/subscriptions/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, platformProcedure, platformProcedureWithQuerySlug } from '../procedures.ts';

const tags = ['subscriptions'];
/**
 * The organization named by organization_slug (or the caller's own); reading its subscription
 * needs subscription.read there, which a platform admin changing it holds everywhere.
 */
const readSubscription = { permission: 'subscription.read', organization: 'slug' } as const;
const PLATFORM_ONLY = 'Platform admins only (anyone else signed in gets 403 forbidden; an API key 403).';

/** Subscription plans and the manual subscription model (docs/api.md "Subscriptions"; the 402 rule is trpc/subscription-gate.ts). */
export const subscriptionsRouter = router({
  plan: router({
    list: controlProcedure
      .meta({ openapi: { method: 'GET', path: '/subscription-plans', tags, summary: 'List subscription plans (anyone signed in)' } })
      .input(ZListSubscriptionPlansRequest)
      .output(ZSubscriptionPlanPage)
      .query(({ ctx, input }) => listPlans(ctx.services.db, input)),
    create: platformProcedure
      .meta({
        errors: ['plan_key_taken'],
        openapi: {
          method: 'POST',
          path: '/subscription-plans',
          tags,
          summary: 'Create a subscription plan',
          description: `${PLATFORM_ONLY} isDefault: true makes it the plan new organizations get, in the same transaction as the previous default stops being one. 409 plan_key_taken when the key is in use.`,
        },
        successStatus: 201,
      })
      .input(ZCreateSubscriptionPlanRequest)
      .output(ZSubscriptionPlan)
      .mutation(({ ctx, input }) => createPlan(ctx.services.db, ctx.principal, ctx.request, input)),
    update: platformProcedure
      .meta({
        errors: ['default_plan_required', 'plan_key_taken', 'plan_not_found'],
        openapi: {
          method: 'PATCH',
          path: '/subscription-plans/{id}',
          tags,
          summary: "Change a plan's key, name, seat limit, usage limits, or make it the default",
          description: `${PLATFORM_ONLY} Organizations on the plan are measured against the new limits from their next request. 409 plan_key_taken, 409 default_plan_required (isDefault: false on the default plan), 404 plan_not_found.`,
        },
      })
      .input(ZUpdateSubscriptionPlanRequest)
      .output(ZSubscriptionPlan)
      .mutation(({ ctx, input }) => updatePlan(ctx.services.db, ctx.principal, ctx.request, input)),
  }),
  get: controlProcedure
    .meta({
      access: readSubscription,
      openapi: {
        method: 'GET',
        path: '/subscription',
        tags,
        summary: "An organization's subscription: plan, status, seats bought and used, this month's usage against its limits",
        description:
          'Needs subscription.read. `blocked` is what mutating project, user, webhook and usage routes answer now (402), or null.',
      },
    })
    .input(ZGetSubscriptionRequest)
    .use(resolveAccess)
    .output(ZSubscription)
    .query(({ ctx }) => getSubscription(ctx.services.db, ctx.access, ctx.services.config.subscriptionUpgradeUrl)),
  update: platformProcedureWithQuerySlug
    .meta({
      access: readSubscription,
      errors: ['plan_not_found'],
      openapi: {
        method: 'PATCH',
        path: '/subscription',
        tags,
        summary: "Change an organization's plan, seats or status",
        description: `${PLATFORM_ONLY} Audited as subscription.updated, which also emits that webhook event. 404 plan_not_found for an unknown planKey; 404 not_found for the platform workspace (it has no subscription).`,
      },
    })
    .input(ZUpdateSubscriptionRequest)
    .use(resolveAccess)
    .output(ZSubscription)
    .mutation(({ ctx, input }) =>
      updateSubscriptionFor(ctx.services.db, ctx.access, ctx.request, input, ctx.services.config.subscriptionUpgradeUrl),
    ),
});
