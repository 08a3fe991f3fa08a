import { ZAuditLogEntry, ZAuditLogPage, ZGetAuditLogEntryRequest, ZListAuditLogsRequest } from '@svc/contracts/audit-logs';
import { getAuditLogEntry, listAuditLogs } from '../../modules/audit-logs/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

export const auditLogsRouter = router({
  list: controlProcedure
    .meta({
      access: { permission: 'audit.read', organization: 'slug' },
      openapi: {
        method: 'GET',
        path: '/audit-logs',
        tags: ['audit-logs'],
        summary: 'Read the audit log of an organization, newest first',
        description:
          "Needs audit.read. organization_slug selects the organization (default: the active workspace, or the API key's). Filters: action (exact, or resource.*), actor (a person's email, usr_... or key_...), target (an id), from (inclusive) and to (exclusive), ISO 8601. A cursor only continues the list (organization and filters) it came from.",
      },
    })
    .input(ZListAuditLogsRequest)
    .use(resolveAccess)
    .output(ZAuditLogPage)
    .query(({ ctx, input }) => listAuditLogs(ctx.services.db, ctx.access, input)),
  get: controlProcedure
    .meta({
      access: { permission: 'audit.read', organization: 'slug' },
      openapi: {
        method: 'GET',
        path: '/audit-logs/{id}',
        tags: ['audit-logs'],
        summary: 'Read one entry of the audit log of an organization',
        description:
          "Needs audit.read. organization_slug selects the organization (default: the active workspace, or the API key's); an entry of another organization is 404.",
      },
    })
    .input(ZGetAuditLogEntryRequest)
    .use(resolveAccess)
    .output(ZAuditLogEntry)
    .query(({ ctx, input }) => getAuditLogEntry(ctx.services.db, ctx.access, input)),
});
