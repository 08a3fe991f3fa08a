import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { describe } from 'vitest';

/** Debian's `chromium` package; playwright-core drives it and never downloads a browser. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Screenshots land here; CI keeps the folder as a test artifact (it is git-ignored). */
export const ARTIFACTS_DIR = fileURLToPath(new URL('../artifacts', import.meta.url));

/** True when the Chromium executable exists and may be run. */
export function chromiumAvailable(): boolean {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Saves a full-page screenshot to e2e/artifacts/<name>.png and returns its path. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const file = path.join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/**
 * `describe` when Chromium is installed. Without it, CI (E2E_REQUIRED=1) fails at once: a missing
 * browser must never pass silently; elsewhere the suite is skipped with a loud warning.
 */
export function describeInChromium(name: string, body: () => void): void {
  describeWhenInstalled(
    name,
    chromiumAvailable()
      ? undefined
      : `Chromium not found at ${CHROMIUM_PATH} (install Debian's package: apt-get install -y chromium, or set CHROMIUM_PATH)`,
    body,
  );
}

/**
 * A suite that needs something installed from Debian: `missing` says what is not, or undefined
 * when everything is. Missing under E2E_REQUIRED=1 is a failure.
 */
export function describeWhenInstalled(name: string, missing: string | undefined, body: () => void): void {
  if (missing === undefined) {
    describe(name, body);
    return;
  }
  if (process.env.E2E_REQUIRED === '1') {
    throw new Error(`E2E_REQUIRED=1 but ${missing}.`);
  }
  console.warn(`\n!!! e2e SKIPPED: ${missing}. Set E2E_REQUIRED=1 to make this a failure. !!!\n`);
  // Skipped on purpose, and only outside CI: a developer without Debian's packages can still run
  // `pnpm test`; .ci/run installs them and sets E2E_REQUIRED=1, so there a missing one fails above.
  describe.skip(name, body);
}
