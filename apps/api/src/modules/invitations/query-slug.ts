import { AppError } from '@svc/contracts/errors';
import { controlProcedure } from '../../trpc/procedures.ts';

/**
 * SPEC.md writes some POST routes with `?organization_slug=` in the query (e.g.
 * POST /v1/invitations/{id}/revoke), but the REST adapter builds a POST's input from the body and
 * the path only. This procedure also takes the query's `organization_slug`, as if it were in the
 * body; sent in both places with different values it is a 400 rather than a guess.
 */
export const controlProcedureWithQuerySlug = controlProcedure.use(async ({ ctx, getRawInput, next }) => {
  const fromQuery = ctx.req.query?.organization_slug;
  if (fromQuery === undefined) {
    return next();
  }
  return next({
    getRawInput: async () => {
      const raw = (await getRawInput()) ?? {};
      if (typeof raw !== 'object' || Array.isArray(raw)) {
        return raw;
      }
      const fromBody = (raw as { organization_slug?: unknown }).organization_slug;
      if (fromBody !== undefined && fromBody !== fromQuery) {
        throw new AppError('validation_failed', 'organization_slug differs between the query and the body');
      }
      return { ...raw, organization_slug: fromQuery };
    },
  });
});
