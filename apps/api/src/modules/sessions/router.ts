import { ZGetSessionRequest, ZListSessionsRequest, ZRevokeSessionRequest, ZSession, ZSessionPage } from '@svc/contracts/sessions';
import { router } from '../../trpc/init.ts';
import { controlProcedure, controlProcedureWithQuerySlug } from '../../trpc/procedures.ts';
import { getSession, listSessions, revokeSession } from './service.ts';

/** An organization's sign-in sessions (the cookie-session core is modules/session-store). */
export const sessionsRouter = router({
  list: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/sessions', tags: ['sessions'], summary: "List the sessions of an organization's members" } })
    .input(ZListSessionsRequest)
    .output(ZSessionPage)
    .query(({ ctx, input }) => listSessions(ctx.services.db, ctx.principal, input)),
  get: controlProcedure
    .meta({
      openapi: { method: 'GET', path: '/sessions/{id}', tags: ['sessions'], summary: "Read one session of an organization's member" },
    })
    .input(ZGetSessionRequest)
    .output(ZSession)
    .query(({ ctx, input }) => getSession(ctx.services.db, ctx.principal, input)),
  revoke: controlProcedureWithQuerySlug
    .meta({
      openapi: {
        method: 'POST',
        path: '/sessions/{id}/revoke',
        tags: ['sessions'],
        summary: 'Revoke a session: its next request fails on every API process',
      },
    })
    .input(ZRevokeSessionRequest)
    .output(ZSession)
    .mutation(({ ctx, input }) => revokeSession(ctx.services.db, ctx.principal, ctx.request, input)),
});
