#!/usr/bin/env node
/**
 * `svc`'s entry point: the usage text, and every other command loaded only when it runs
 * (cli/run.ts; `serve` and `worker` load the server and the worker in turn), so `svc --help`
 * and a one-off command start in a fraction of the server's start.
 */
const USAGE = `svc <command>

  serve [--no-worker]                 run the API server (and the worker unless --no-worker or WORKER_ENABLED=false)
  worker                              run the job worker only
  migrate                             apply database migrations and exit
  apps create --org <slug> --name <name> [--org-name <name>] [--status active|disabled]
                    [--client-type confidential|public|machine] [--json]
              a machine client: [--permission <name>]... (product permissions, repeatable)
                    [--auth-method client_secret_basic|private_key_jwt]
                    [--jwks-file <path to a JWK Set> | --jwks-uri <https URL>]
  apps list [--org <slug>] [--json]   every application (the keyless development one marked), newest first
  apps claim --org <slug> --client-type confidential|public [--name <name>] [--json]
              the keyless development application into an organization (confidential: an app
              with a server, which takes the secret key printed once; public: browser-only)
  apps set-status <id-or-slug> <active|disabled> [--org <slug>] [--json]
  apps rotate-secret <id-or-slug> [--org <slug>] [--json]
  orgs list [--member <email>] [--json]
                                      organizations and their members (--member: only where that person is one)
  keys rotate [--json]                a new OpenID Provider signing key (the previous one stays published until its tokens expire)
  resources create --identifier <https-url> --name <name> [--description <text>]
                    [--permission <name>]... [--json]
                                      register an API of the product with its permissions
  resources list [--json]             the product's API resources and their permissions
  product-roles create --key <key> --name <name> [--description <text>] [--permission <name>]... [--json]
                                      a role every organization has, from the product's permissions
  product-roles list [--json]         the built-in rows (org_admin, org_member), then the product roles

Configuration comes from the environment; see README.md.`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { run } = await import('./cli/run.ts');
  await run(command, rest);
}

main(process.argv.slice(2)).catch(async (error: unknown) => {
  const { reportFailure } = await import('./cli/run.ts');
  reportFailure(error);
});
