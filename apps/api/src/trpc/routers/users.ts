import {
  ZCreateUserRequest,
  ZGetUserRequest,
  ZListUsersRequest,
  ZRemoveUserRequest,
  ZRemoveUserResponse,
  ZUpdateUserRequest,
  ZUser,
  ZUserPage,
} from '@svc/contracts/users';
import { createUser, getUser, listUsers, removeUser, updateUser } from '../../modules/users/service.ts';
import { resolveAccess } from '../access.ts';
import { router } from '../init.ts';
import { controlProcedure } from '../procedures.ts';

/**
 * users.read lists and reads members; users.manage (an org admin's) adds, changes and removes
 * them. The organization is `organization_slug`, else the caller's own.
 */
const read = { permission: 'users.read', organization: 'slug' } as const;
const manage = { permission: 'users.manage', organization: 'slug', adminOnly: true } as const;

export const usersRouter = router({
  list: controlProcedure
    .meta({
      access: read,
      openapi: { method: 'GET', path: '/users', tags: ['users'], summary: "List an organization's users (its members)" },
    })
    .input(ZListUsersRequest)
    .use(resolveAccess)
    .output(ZUserPage)
    .query(({ ctx, input }) => listUsers(ctx.services.db, ctx.access, input)),
  get: controlProcedure
    .meta({
      access: read,
      openapi: { method: 'GET', path: '/users/{id}', tags: ['users'], summary: "Read one of an organization's users (a member)" },
    })
    .input(ZGetUserRequest)
    .use(resolveAccess)
    .output(ZUser)
    .query(({ ctx, input }) => getUser(ctx.services.db, ctx.access, input)),
  create: controlProcedure
    .meta({
      access: manage,
      // engine_*: a new person is created in the engine first (engine-users.ts).
      errors: [
        'already_member',
        'platform_workspace_managed',
        'unknown_role',
        'engine_unreachable',
        'engine_bad_response',
        'engine_timeout',
      ],
      openapi: {
        method: 'POST',
        path: '/users',
        tags: ['users'],
        summary: 'Pre-provision a user in the organization (and in the engine when its admin API is configured)',
      },
      successStatus: 201,
      subscription: { seats: 'adds' },
    })
    .input(ZCreateUserRequest)
    .use(resolveAccess)
    .output(ZUser)
    .mutation(({ ctx, input }) =>
      createUser({ db: ctx.services.db, engineAdmin: ctx.services.config.engine.admin }, ctx.access, ctx.request, input),
    ),
  update: controlProcedure
    .meta({
      access: manage,
      errors: [
        'last_org_admin',
        'membership_pending',
        'platform_admin_protected',
        'platform_workspace_managed',
        'unknown_role',
        'user_profile_forbidden',
      ],
      openapi: {
        method: 'PATCH',
        path: '/users/{id}',
        tags: ['users'],
        summary: "Change a user's name or role, suspend or reactivate them",
      },
      subscription: {},
    })
    .input(ZUpdateUserRequest)
    .use(resolveAccess)
    .output(ZUser)
    .mutation(({ ctx, input }) => updateUser(ctx.services.db, ctx.access, ctx.request, input)),
  remove: controlProcedure
    .meta({
      access: manage,
      errors: ['last_org_admin', 'platform_admin_protected', 'platform_workspace_managed'],
      openapi: {
        method: 'DELETE',
        path: '/users/{id}',
        tags: ['users'],
        summary: 'Remove a user from the organization (the person and their other memberships stay)',
      },
      subscription: { seats: 'removes' },
    })
    .input(ZRemoveUserRequest)
    .use(resolveAccess)
    .output(ZRemoveUserResponse)
    .mutation(({ ctx, input }) => removeUser(ctx.services.db, ctx.access, ctx.request, input)),
});
