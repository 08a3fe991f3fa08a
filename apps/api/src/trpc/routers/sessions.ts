import { ZGetSessionRequest, ZListSessionsRequest, ZRevokeSessionRequest, ZSession, ZSessionPage } from '@svc/contracts/sessions';
import { getSession, listSessions, revokeSession } from '../../modules/sessions/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure, controlProcedureWithQuerySlug } from '../procedures.ts';

/** An organization's sign-in sessions (the cookie-session core is modules/session-store). */
export const sessionsRouter = router({
  list: controlProcedure
    .meta({
      access: { permission: 'sessions.read', organization: 'slug' },
      openapi: { method: 'GET', path: '/sessions', tags: ['sessions'], summary: "List the sessions of an organization's members" },
    })
    .input(ZListSessionsRequest)
    .use(resolveAccess)
    .output(ZSessionPage)
    .query(({ ctx, input }) => listSessions(ctx.services.db, ctx.access, input)),
  get: controlProcedure
    .meta({
      access: { permission: 'sessions.read', organization: 'slug' },
      openapi: { method: 'GET', path: '/sessions/{id}', tags: ['sessions'], summary: "Read one session of an organization's member" },
    })
    .input(ZGetSessionRequest)
    .use(resolveAccess)
    .output(ZSession)
    .query(({ ctx, input }) => getSession(ctx.services.db, ctx.access, input)),
  revoke: controlProcedureWithQuerySlug
    .meta({
      access: { permission: 'sessions.revoke', organization: 'slug', adminOnly: true },
      openapi: {
        method: 'POST',
        path: '/sessions/{id}/revoke',
        tags: ['sessions'],
        summary: 'Revoke a session: its next request fails on every API process',
      },
    })
    .input(ZRevokeSessionRequest)
    .use(resolveAccess)
    .output(ZSession)
    .mutation(({ ctx, input }) => revokeSession(ctx.services.db, ctx.access, ctx.request, input)),
});
