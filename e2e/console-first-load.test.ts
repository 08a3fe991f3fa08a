import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeInChromium, launchChromium } from './support/browser.ts';
import { type E2EServer, startServer } from './support/server.ts';
import { DEMO_USER, signInAt } from './support/sign-in.ts';

const CONSOLE = '/auth/console';

/** The first load of the Overview stays under this many bytes on the wire (docs/architecture.md section 3). */
const FIRST_LOAD_BUDGET = 500_000;

/** How long the page must fetch nothing before the load counts as over (the chunks fetched after the first render included). */
const QUIET_MS = 1_500;

type Fetched = { url: string; status: number; encoding: string | undefined; bytes: number };

/** Every response of a cold load of `path` (cache emptied), with its size on the wire (headers + encoded body). */
async function coldLoad(page: Page, path: string): Promise<Fetched[]> {
  // Off the console first: what the previous page still fetches is not counted.
  await page.goto('about:blank');
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.clearBrowserCache');
  const fetched: Fetched[] = [];
  let last = Date.now();
  const onFinished = async (request: import('playwright-core').Request) => {
    last = Date.now();
    const response = await request.response();
    const sizes = await request.sizes();
    fetched.push({
      url: request.url(),
      status: response?.status() ?? 0,
      encoding: (await response?.allHeaders())?.['content-encoding'],
      bytes: sizes.responseHeadersSize + sizes.responseBodySize,
    });
  };
  page.on('requestfinished', onFinished);
  page.on('request', () => {
    last = Date.now();
  });
  await page.goto(path);
  await page.getByTestId('console-shell').waitFor({ state: 'visible' });
  while (Date.now() - last < QUIET_MS) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  page.off('requestfinished', onFinished);
  await cdp.detach();
  return fetched;
}

/**
 * The console's first load: the static assets compressed and cached for good, the current page's
 * chunk the only page chunk fetched, the whole load of the Overview under FIRST_LOAD_BUDGET, and
 * React's production build (docs/architecture.md section 3).
 */
describeInChromium('e2e: the console loads light', () => {
  let server: E2EServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    server = await startServer();
    browser = await launchChromium();
    context = await browser.newContext({ baseURL: server.url, viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(20_000);
    page = await context.newPage();
    await signInAt(page, server.url, `${CONSOLE}/`, DEMO_USER);
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
  });

  it('the Overview loads compressed, under the budget, with only its own page chunk', async () => {
    const fetched = await coldLoad(page, `${CONSOLE}/`);
    const assets = fetched.filter((f) => new URL(f.url).pathname.startsWith(`${CONSOLE}/assets/`));
    const total = fetched.reduce((sum, f) => sum + f.bytes, 0);
    const largest = [...assets].sort((a, b) => b.bytes - a.bytes)[0];
    console.info(
      `first load of the Overview: ${fetched.length} responses, ${total} bytes transferred; ${assets.length} assets, ` +
        `the largest ${largest ? `${new URL(largest.url).pathname} at ${largest.bytes} bytes` : 'none'}`,
    );
    expect(assets.length).toBeGreaterThan(0);
    expect(
      assets.filter((f) => f.status === 200 && !/^(br|gzip)$/.test(f.encoding ?? '')).map((f) => f.url),
      'assets sent uncompressed',
    ).toEqual([]);
    // Page chunks are named after their module (pages/<domain>/<name>-page.tsx).
    const pageChunks = assets.map((f) => new URL(f.url).pathname.split('/').pop() ?? '').filter((name) => /-page-[\w-]+\.js$/.test(name));
    expect(pageChunks.map((name) => name.replace(/-page-.*$/, '-page'))).toEqual(['overview-page']);
    expect(total).toBeLessThan(FIRST_LOAD_BUDGET);
  });

  it('the first Tab stop skips to the page: past the header and the navigation', async () => {
    await page.goto(`${CONSOLE}/`);
    await page.getByTestId('console-shell').waitFor({ state: 'visible' });
    // The page has something to focus (its links come with its data; a slow machine is still loading them).
    await page.locator('main#content a[href]').first().waitFor({ state: 'visible' });
    await page.keyboard.press('Tab');
    const skip = page.getByTestId('skip-link');
    expect(await skip.evaluate((el) => el === document.activeElement)).toBe(true);
    // Visible once focused (off screen before).
    const box = await skip.boundingBox();
    expect(box && box.y >= 0).toBe(true);
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('content');
    // The next Tab lands inside the page, not in the navigation.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.closest('main')?.id ?? null)).toBe('content');
  });

  it('hashed assets are cached for good, index.html never, and compression follows Accept-Encoding', async () => {
    const html = await fetch(`${server.url}${CONSOLE}/`, { headers: { cookie: await cookieHeader(context, server.url) } });
    expect(html.status).toBe(200);
    expect(html.headers.get('cache-control')).toMatch(/no-store|no-cache/);
    const scripts = [...(await html.text()).matchAll(/(?:src|href)="([^"]+\.js)"/g)].map(([, src]) => `${server.url}${src}`);
    const [url] = scripts;
    expect(url).toBeDefined();

    const br = await fetch(`${url}`, { headers: { 'accept-encoding': 'br, gzip' } });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('vary')).toMatch(/accept-encoding/i);
    expect(br.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const gzip = await fetch(`${url}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(gzip.headers.get('content-encoding')).toBe('gzip');
    // undici decodes both: the same script whichever encoding it came in.
    const plain = await fetch(`${url}`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    const text = await plain.text();
    expect(await br.text()).toBe(text);
    expect(await gzip.text()).toBe(text);
    // React's production build: its development runtime carries these warnings, the production one does not.
    const bundle = (await Promise.all(scripts.map(async (src) => (await fetch(src)).text()))).join('\n');
    expect(bundle).not.toContain('react-dom.development');
    expect(bundle).not.toContain('Warning: Each child in a list should have a unique');

    const missing = await fetch(`${server.url}${CONSOLE}/assets/no-such-file.js`, { headers: { 'accept-encoding': 'br' } });
    expect(missing.status).toBe(404);
  });
});

async function cookieHeader(context: BrowserContext, url: string): Promise<string> {
  return (await context.cookies(url)).map((c) => `${c.name}=${c.value}`).join('; ');
}
