import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** One thing an agent does, in the prompt's order: run a shell block, or write a file. */
export type PromptStep =
  | { section: string; kind: 'command'; body: string }
  | { section: string; kind: 'file'; path: string; language: string; body: string };

/**
 * Reads an agent context's aiAgentPrompt as an agent following it literally would: every fenced
 * block in order, under its `## N. Section` heading; a block right after a line "File `path`:"
 * is that file's whole content, an `sh` block is commands to run.
 */
export function readPrompt(markdown: string): PromptStep[] {
  const steps: PromptStep[] = [];
  const lines = markdown.split('\n');
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heading = /^## (?:\d+\. )?(.+)$/.exec(line);
    if (heading) {
      section = heading[1] as string;
      continue;
    }
    const open = /^(`{3,})(\S*)$/.exec(line);
    if (!open) {
      continue;
    }
    const fence = open[1] as string;
    const language = open[2] as string;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== fence; i++) {
      body.push(lines[i] as string);
    }
    const previous = lines.slice(0, i - body.length - 1).findLast((l) => l.trim() !== '') ?? '';
    const file = /^File `([^`]+)`:$/.exec(previous);
    if (file) {
      steps.push({ section, kind: 'file', path: file[1] as string, language, body: `${body.join('\n')}\n` });
    } else if (language === 'sh') {
      steps.push({ section, kind: 'command', body: body.join('\n') });
    }
  }
  return steps;
}

/**
 * Does what the prompt says in `dir`: runs its commands (bash, as written) and writes its files,
 * in order, except the Run section's command, which it returns. `skip` names sections whose
 * commands this machine cannot run as written (a pip install without PyPI); the caller then
 * provides what they install and asserts what they name.
 */
export function followPrompt(
  prompt: string,
  dir: string,
  opts: { skip?: string[]; env?: NodeJS.ProcessEnv } = {},
): { run: string; steps: PromptStep[] } {
  const steps = readPrompt(prompt);
  let run: string | undefined;
  for (const step of steps) {
    if (step.kind === 'file') {
      const target = path.resolve(dir, step.path);
      if (!target.startsWith(`${path.resolve(dir)}${path.sep}`)) {
        throw new Error(`the prompt writes outside the project: ${step.path}`);
      }
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, step.body);
      continue;
    }
    if (step.section === 'Run') {
      run = step.body;
      continue;
    }
    if (opts.skip?.includes(step.section)) {
      continue;
    }
    const result = spawnSync('bash', ['-euo', 'pipefail', '-c', step.body], {
      cwd: dir,
      env: opts.env ?? process.env,
      encoding: 'utf8',
      timeout: 240_000,
    });
    if (result.status !== 0) {
      throw new Error(`"${step.section}" failed (exit ${result.status}):\n${step.body}\n${result.stdout}\n${result.stderr}`);
    }
  }
  if (run === undefined) {
    throw new Error('the prompt has no Run command');
  }
  return { run, steps };
}

export type RunningApp = { output: () => string; stop: () => Promise<void> };

/**
 * Starts the Run command in `dir` in its own process group and waits until `origin` answers
 * HTTP (any status). stop() ends the whole group.
 */
export async function startApp(
  run: string,
  dir: string,
  origin: string,
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunningApp> {
  const child: ChildProcess = spawn('bash', ['-c', `exec ${run}`], {
    cwd: dir,
    env: opts.env ?? process.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-(child.pid as number), 'SIGTERM');
    const killer = setTimeout(() => process.kill(-(child.pid as number), 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(killer);
  };
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    const answered = await fetch(origin, { redirect: 'manual', signal: AbortSignal.timeout(5_000) }).then(
      async (res) => {
        await res.body?.cancel();
        return true;
      },
      () => false,
    );
    if (answered) {
      return { output: () => output, stop };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`the app did not start (exit ${child.exitCode}):\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A signed-in person's identity in svc, read from the database: what the app must show. */
export type Member = { user_id: string; tenant_id: string; slug: string; role_key: string };

/**
 * An access token and an ID token of `clientId` for `person` (svc's keyless client: any loopback redirect), by
 * the authorization code flow with PKCE in a cookie jar: what another client of the app's API
 * would hold. Scope includes organization.
 */
export async function tokensFor(svcUrl: string, clientId: string): Promise<{ accessToken: string; idToken: string }> {
  const { CookieJar, browseToRedirect } = await import('../../test/support/oidc-browser.ts');
  const { createHash, randomBytes } = await import('node:crypto');
  const verifier = randomBytes(32).toString('base64url');
  const redirectUri = 'http://127.0.0.1:9/api-client/callback';
  const discovery = (await (await fetch(`${svcUrl}/.well-known/openid-configuration`)).json()) as {
    authorization_endpoint: string;
    token_endpoint: string;
  };
  const authorize = new URL(discovery.authorization_endpoint);
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'openid email organization',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'api-client',
  }).toString();
  const { callback } = await browseToRedirect(new CookieJar(), authorize, { svcUrl, redirectUri });
  const res = await fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') ?? '',
      redirect_uri: redirectUri,
      code_verifier: verifier,
      client_id: clientId,
    }),
  });
  const body = (await res.json()) as { access_token?: string; id_token?: string; error?: string };
  if (!body.access_token || !body.id_token) {
    throw new Error(`token endpoint answered ${res.status}: ${JSON.stringify(body)}`);
  }
  return { accessToken: body.access_token, idToken: body.id_token };
}
