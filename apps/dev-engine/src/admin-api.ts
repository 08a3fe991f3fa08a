import { createHash, timingSafeEqual } from 'node:crypto';
import express from 'express';
import { z } from 'zod';
import type { StoredUser, UserStore } from './users.ts';

/** Authentik's group pk is a UUID: derive a stable one from the name. */
function groupPk(name: string): string {
  const h = createHash('sha256').update(`svc-dev-engine-group:${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Authentik's user serializer, minus anything secret (the password hash never leaves the store). */
function serializeUser(user: StoredUser) {
  return {
    pk: user.pk,
    uid: user.sub,
    username: user.username,
    name: user.name,
    email: user.email,
    is_active: user.isActive,
    is_superuser: false,
    type: 'internal',
    path: 'users',
    attributes: { email_verified: user.emailVerified },
    groups: user.groups.map(groupPk),
    groups_obj: user.groups.map((name) => ({ pk: groupPk(name), name, is_superuser: false, parent: null, attributes: {} })),
  };
}

function paginate<T>(req: express.Request, items: T[]) {
  const pageSize = Math.min(Math.max(Number(req.query.page_size) || 20, 1), 1000);
  const totalPages = Math.max(1, Math.ceil(items.length / pageSize));
  const current = Math.min(Math.max(Number(req.query.page) || 1, 1), totalPages);
  const start = (current - 1) * pageSize;
  const results = items.slice(start, start + pageSize);
  return {
    pagination: {
      next: current < totalPages ? current + 1 : 0,
      previous: current > 1 ? current - 1 : 0,
      count: items.length,
      current,
      total_pages: totalPages,
      start_index: results.length ? start + 1 : 0,
      end_index: start + results.length,
    },
    results,
  };
}

const ZCreateUser = z.object({
  username: z.string().min(1),
  email: z.email(),
  name: z.string().min(1),
  password: z.string().min(1).optional(),
  is_active: z.boolean().optional(),
  /** Group names (Authentik takes group pks; names are simpler for development). */
  groups: z.array(z.string().min(1)).optional(),
});

function tokenMatches(header: string | undefined, adminToken: string): boolean {
  const match = /^Bearer (.+)$/.exec(header ?? '');
  if (!match?.[1]) {
    return false;
  }
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(match[1]), digest(adminToken));
}

/** Authentik-shaped admin API (`/api/v3/`), behind `Authorization: Bearer <adminToken>`. */
export function adminApiRouter(opts: { users: UserStore; adminToken: string }): express.Router {
  const { users, adminToken } = opts;
  const router = express.Router();
  router.use((req, res, next) => {
    if (!tokenMatches(req.get('authorization'), adminToken)) {
      res.status(401).json({ detail: 'Authentication credentials were not provided.' });
      return;
    }
    next();
  });
  router.use(express.json({ limit: '64kb' }));

  router.get('/core/users/', (req, res) => {
    let list = users.list();
    const { email, username, search } = req.query;
    if (typeof email === 'string') {
      list = list.filter((u) => u.email.toLowerCase() === email.toLowerCase());
    }
    if (typeof username === 'string') {
      list = list.filter((u) => u.username === username);
    }
    if (typeof search === 'string') {
      const s = search.toLowerCase();
      list = list.filter((u) => `${u.email} ${u.name} ${u.username}`.toLowerCase().includes(s));
    }
    res.json(paginate(req, list.map(serializeUser)));
  });

  router.get('/core/users/:pk/', (req, res) => {
    const user = users.get(Number(req.params.pk));
    if (!user) {
      res.status(404).json({ detail: 'Not found.' });
      return;
    }
    res.json(serializeUser(user));
  });

  router.post('/core/users/', (req, res) => {
    const parsed = ZCreateUser.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json(Object.fromEntries(parsed.error.issues.map((i) => [i.path.join('.') || 'non_field_errors', [i.message]])));
      return;
    }
    const input = parsed.data;
    if (users.findByEmail(input.email)) {
      res.status(400).json({ email: ['A user with this email already exists.'] });
      return;
    }
    const user = users.create({
      username: input.username,
      email: input.email,
      name: input.name,
      password: input.password,
      groups: input.groups ?? [],
      emailVerified: false,
      isActive: input.is_active !== false,
    });
    res.status(201).json(serializeUser(user));
  });

  /** Authentik's group serializer; a group exists while a user is in it. */
  const listGroups = () => {
    const all = users.list();
    const names = [...new Set(all.flatMap((u) => u.groups))].sort();
    return names.map((name) => ({
      pk: groupPk(name),
      num_pk: names.indexOf(name) + 1,
      name,
      is_superuser: false,
      parent: null,
      attributes: {},
      users: all.filter((u) => u.groups.includes(name)).map((u) => u.pk),
    }));
  };

  router.get('/core/groups/', (req, res) => {
    res.json(paginate(req, listGroups()));
  });

  router.get('/core/groups/:pk/', (req, res) => {
    const group = listGroups().find((g) => g.pk === req.params.pk);
    if (!group) {
      res.status(404).json({ detail: 'Not found.' });
      return;
    }
    res.json(group);
  });

  router.use((_req, res) => {
    res.status(404).json({ detail: 'Not found.' });
  });

  return router;
}
