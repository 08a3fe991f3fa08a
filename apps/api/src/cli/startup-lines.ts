import type { DemoUser } from '../server.ts';

/**
 * What `svc serve` prints on stdout once it listens, as plain lines whatever LOG_FORMAT says:
 * where it is, and in development (NODE_ENV=development) how to sign in (the development engine's people) and the
 * keyless quickstart, the two things a person starting svc for the first time looks for.
 */
export function startupLines(opts: { url: string; development: boolean; demoUsers: DemoUser[]; keylessEnabled: boolean }): string[] {
  const { url } = opts;
  const lines = [`svc listening on ${url} (console ${url}/auth/console, API docs ${url}/docs)`];
  // Only for a person at a terminal: tests (NODE_ENV=test) and production read the one line.
  if (!opts.development) {
    return lines;
  }
  if (opts.demoUsers.length > 0) {
    lines.push(`sign in at ${url}/signin (development engine) as:`);
    for (const user of opts.demoUsers) {
      lines.push(`  ${user.email} / ${user.password}${user.groups.length > 0 ? `  (${user.groups.join(', ')})` : ''}`);
    }
  }
  if (opts.keylessEnabled) {
    lines.push(`keyless quickstart, no account or key: curl '${url}/v1/setup/agent-context?keyless=1&framework=express&format=markdown'`);
  }
  return lines;
}
