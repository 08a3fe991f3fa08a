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
import { router } from '../../trpc/init.ts';
import { controlProcedure } from '../../trpc/procedures.ts';
import { createUser, getUser, listUsers, removeUser, updateUser } from './service.ts';

export const usersRouter = router({
  list: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/users', tags: ['users'], summary: "List an organization's users (its members)" } })
    .input(ZListUsersRequest)
    .output(ZUserPage)
    .query(({ ctx, input }) => listUsers(ctx.services.db, ctx.principal, input)),
  get: controlProcedure
    .meta({ openapi: { method: 'GET', path: '/users/{id}', tags: ['users'], summary: "Read one of an organization's users (a member)" } })
    .input(ZGetUserRequest)
    .output(ZUser)
    .query(({ ctx, input }) => getUser(ctx.services.db, ctx.principal, input)),
  create: controlProcedure
    .meta({
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
    .output(ZUser)
    .mutation(({ ctx, input }) =>
      createUser({ db: ctx.services.db, engineAdmin: ctx.services.config.engine.admin }, ctx.principal, ctx.request, input),
    ),
  update: controlProcedure
    .meta({
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
    .output(ZUser)
    .mutation(({ ctx, input }) => updateUser(ctx.services.db, ctx.principal, ctx.request, input)),
  remove: controlProcedure
    .meta({
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
    .output(ZRemoveUserResponse)
    .mutation(({ ctx, input }) => removeUser(ctx.services.db, ctx.principal, ctx.request, input)),
});
