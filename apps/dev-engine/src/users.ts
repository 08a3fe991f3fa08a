import { createHash, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** A user seeded into the development engine. */
export type DevUser = {
  email: string;
  password: string;
  name: string;
  /** Group names, sent as the `groups` claim (profile scope) like Authentik does. */
  groups: string[];
  /** Defaults to true for seeded users. */
  emailVerified?: boolean;
};

const ZDevUser = z.object({
  email: z.email(),
  password: z.string().min(1),
  name: z.string().min(1),
  groups: z.array(z.string().min(1)).default([]),
  emailVerified: z.boolean().optional(),
});

const ZDevUsers = z.array(ZDevUser);

/**
 * Demo users seeded when DEV_ENGINE_USERS is unset. Development credentials only: the engine
 * binds to loopback and keeps everything in memory.
 */
export const DEMO_USERS: DevUser[] = [
  { email: 'admin@svc.local', password: 'admin-password', name: 'Platform Admin', groups: ['platform-admins'], emailVerified: true },
  { email: 'user@svc.local', password: 'user-password', name: 'Demo User', groups: [], emailVerified: true },
];

/** The fixed identity the social source (`/source/oauth/login/<slug>/`) signs in. */
export const SOCIAL_USER = { email: 'social@svc.local', name: 'Social User', groups: [] as string[] };

/**
 * Reads DEV_ENGINE_USERS: a JSON array of `{ email, password, name, groups }` or a path to a
 * file holding one. Unset or empty gives DEMO_USERS. Throws an Error naming the variable and the
 * first problem otherwise.
 */
export function loadDevUsers(env: Record<string, string | undefined>): DevUser[] {
  const raw = env.DEV_ENGINE_USERS?.trim();
  if (!raw) {
    return DEMO_USERS;
  }
  let text = raw;
  let source = 'DEV_ENGINE_USERS';
  if (raw.startsWith('{')) {
    throw new Error('DEV_ENGINE_USERS must be a JSON array of users (or the path of a JSON file holding one), not an object');
  }
  if (!raw.startsWith('[')) {
    if (!existsSync(raw)) {
      throw new Error(`DEV_ENGINE_USERS must be a JSON array or the path of a JSON file; no file at ${raw}`);
    }
    text = readFileSync(raw, 'utf8');
    source = `DEV_ENGINE_USERS file ${raw}`;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = ZDevUsers.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : '(root)';
    throw new Error(`${source} is invalid at ${where}: ${issue?.message ?? 'unknown error'}`);
  }
  return parsed.data;
}

/** A stored user. The password hash never leaves this module's callers' process. */
export type StoredUser = {
  pk: number;
  /** OIDC subject: stable per email across restarts. */
  sub: string;
  username: string;
  email: string;
  name: string;
  emailVerified: boolean;
  groups: string[];
  isActive: boolean;
  passwordHash: string | null;
};

function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32);
  return `${salt.toString('hex')}:${hash.toString('hex')}`;
}

function checkPassword(password: string, stored: string): boolean {
  const [saltHex, hashHex] = stored.split(':');
  if (!saltHex || !hashHex) {
    return false;
  }
  const expected = Buffer.from(hashHex, 'hex');
  const actual = scryptSync(password, Buffer.from(saltHex, 'hex'), expected.length);
  return timingSafeEqual(actual, expected);
}

function subjectFor(email: string): string {
  return createHash('sha256').update(`svc-dev-engine:${email.toLowerCase()}`).digest('hex');
}

/** A user kept in the users file: everything but the pk, the password only as its scrypt hash. */
const ZKeptUser = z.object({
  email: z.string().min(1),
  username: z.string().min(1),
  name: z.string(),
  emailVerified: z.boolean(),
  groups: z.array(z.string()),
  isActive: z.boolean(),
  passwordHash: z.string().nullable(),
});
const ZUsersFile = z.object({ version: z.literal(1), users: z.array(ZKeptUser) });

/**
 * The user directory. The seed (the demo users or DEV_ENGINE_USERS) is built afresh at each
 * start; with `file`, everyone added later (sign-ups, the social identity, admin API users) is
 * also written there (scrypt hashes, never a password) and read back at the next start, so a
 * restart keeps them. A seeded email wins over a kept one.
 */
export class UserStore {
  #byPk = new Map<number, StoredUser>();
  #nextPk = 1;
  #seeded = new Set<string>();
  readonly #file: string | undefined;

  constructor(seed: DevUser[], opts: { file?: string } = {}) {
    for (const user of seed) {
      this.create({ ...user, emailVerified: user.emailVerified ?? true });
      this.#seeded.add(user.email.toLowerCase());
    }
    this.#file = opts.file;
    for (const kept of this.#read()) {
      if (!this.findByEmail(kept.email)) {
        const user: StoredUser = { pk: this.#nextPk++, sub: subjectFor(kept.email), ...kept };
        this.#byPk.set(user.pk, user);
      }
    }
  }

  /** Where added users are kept, or undefined (memory only). */
  get file(): string | undefined {
    return this.#file;
  }

  #read(): z.infer<typeof ZKeptUser>[] {
    if (!this.#file || !existsSync(this.#file)) {
      return [];
    }
    const parsed = ZUsersFile.safeParse(JSON.parse(readFileSync(this.#file, 'utf8')));
    if (!parsed.success) {
      throw new Error(`${this.#file} is not a users file of the development engine; move it away to start without its users`);
    }
    return parsed.data.users;
  }

  /** Writes every added user: to a temporary file first, so a crash never leaves half a file. */
  #save(): void {
    if (!this.#file) {
      return;
    }
    const users = this.list()
      .filter((u) => !this.#seeded.has(u.email.toLowerCase()))
      .map(({ email, username, name, emailVerified, groups, isActive, passwordHash }) => ({
        email,
        username,
        name,
        emailVerified,
        groups,
        isActive,
        passwordHash,
      }));
    mkdirSync(path.dirname(this.#file), { recursive: true });
    const temporary = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify({ version: 1, users }, null, 2)}\n`, { mode: 0o600 });
    renameSync(temporary, this.#file);
  }

  create(input: {
    email: string;
    name: string;
    password?: string | undefined;
    groups?: string[];
    emailVerified?: boolean;
    username?: string;
    isActive?: boolean;
  }): StoredUser {
    if (this.findByEmail(input.email)) {
      throw new Error('a user with this email already exists');
    }
    const user: StoredUser = {
      pk: this.#nextPk++,
      sub: subjectFor(input.email),
      username: input.username ?? input.email,
      email: input.email,
      name: input.name,
      emailVerified: input.emailVerified ?? false,
      groups: input.groups ?? [],
      isActive: input.isActive ?? true,
      passwordHash: input.password ? hashPassword(input.password) : null,
    };
    this.#byPk.set(user.pk, user);
    this.#save();
    return user;
  }

  findByEmail(email: string): StoredUser | undefined {
    const wanted = email.trim().toLowerCase();
    return [...this.#byPk.values()].find((u) => u.email.toLowerCase() === wanted);
  }

  findBySub(sub: string): StoredUser | undefined {
    return [...this.#byPk.values()].find((u) => u.sub === sub);
  }

  get(pk: number): StoredUser | undefined {
    return this.#byPk.get(pk);
  }

  list(): StoredUser[] {
    return [...this.#byPk.values()];
  }

  /** Returns the user only when the password matches (constant-time compare of scrypt hashes). */
  authenticate(email: string, password: string): StoredUser | undefined {
    const user = this.findByEmail(email);
    if (!user?.passwordHash || !user.isActive) {
      return undefined;
    }
    return checkPassword(password, user.passwordHash) ? user : undefined;
  }
}
