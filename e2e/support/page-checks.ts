import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import axe from 'axe-core';
import type { Page, Request } from 'playwright-core';
import { ARTIFACTS_DIR, saveScreenshot } from './browser.ts';

/** Every page is checked at both widths, in one visit: desktop first, then a phone. */
export const VIEWPORTS = [
  { width: 1440, height: 900 },
  { width: 390, height: 844 },
] as const;

/** Screenshots and the findings file of these checks: e2e/artifacts/pages/. */
export const PAGES_ARTIFACTS_DIR = path.join(ARTIFACTS_DIR, 'pages');

/** axe impacts that fail a page; `moderate` and `minor` are kept as information only. */
const FAILING_IMPACTS = new Set(['serious', 'critical']);

/**
 * How long the page must be quiet (no request in flight, no loading state) to count as settled:
 * after opening it, and after a resize (which fetches nothing unless the page does so on purpose).
 */
const QUIET_MS = 250;
const QUIET_AFTER_RESIZE_MS = 100;
const SETTLE_TIMEOUT_MS = 15_000;

/**
 * What one check found on one page at one width. `axe`, `overflow`, `identifier-wrap`,
 * `not-settled` and `crash` fail the page; `info` does not.
 */
export type Finding =
  | { kind: 'axe'; rule: string; impact: string; help: string; helpUrl: string; targets: string[]; firstFailure: string }
  | { kind: 'overflow'; cell: string; text: string; scrollWidth: number; clientWidth: number }
  | { kind: 'identifier-wrap'; element: string; text: string; rects: number; height: number; lineHeight: number }
  | { kind: 'not-settled'; detail: string }
  | { kind: 'crash'; detail: string }
  | { kind: 'info'; detail: string };

export type PageResult = {
  who: string;
  page: string;
  url: string;
  width: number;
  /** The colour scheme the page was checked in: every width in light (every check), then in dark (the colour rules of axe). */
  scheme: 'light' | 'dark';
  screenshot: string;
  /** How many elements the identifier check looked at, and how many table cells: a check of nothing says so. */
  counted: { identifiers: number; cells: number };
  findings: Finding[];
};

/**
 * Requests of a page still in flight, to know when it has settled. Long polls would never end,
 * but the console has none (its live lists re-fetch on an interval, each request short).
 */
export function trackRequests(page: Page): { inFlight: () => number } {
  const pending = new Set<Request>();
  page.on('request', (r) => pending.add(r));
  page.on('requestfinished', (r) => pending.delete(r));
  page.on('requestfailed', (r) => pending.delete(r));
  return { inFlight: () => pending.size };
}

/**
 * Waits until nothing is pending for `quietMs`: no request in flight, no loading state on screen
 * (the console's carry a data-testid ending in `-loading`; a busy region says aria-busy), fonts
 * loaded. Returns a description of what was still pending at the deadline, or undefined.
 */
async function settle(page: Page, requests: { inFlight: () => number }, quietMs = QUIET_MS): Promise<string | undefined> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let quietSince: number | undefined;
  let pending = '';
  while (Date.now() < deadline) {
    const loading = await page.evaluate(() =>
      [...document.querySelectorAll('[data-testid$="-loading"], [aria-busy="true"]')].map(
        (el) => el.getAttribute('data-testid') ?? `${el.tagName.toLowerCase()}[aria-busy]`,
      ),
    );
    const inFlight = requests.inFlight();
    if (loading.length === 0 && inFlight === 0) {
      quietSince ??= Date.now();
      if (Date.now() - quietSince >= quietMs) {
        await page.evaluate(() => document.fonts.ready.then(() => undefined));
        return undefined;
      }
    } else {
      quietSince = undefined;
      pending = [...loading, ...(inFlight > 0 ? [`${inFlight} request(s) in flight`] : [])].join(', ');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return `still pending after ${SETTLE_TIMEOUT_MS} ms: ${pending}`;
}

/** Two animation frames: whatever a change (a resize, a route) makes React and layout do has run. */
export function nextFrames(page: Page): Promise<void> {
  return page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
}

type AxeNode = { target: unknown[]; failureSummary?: string };
type AxeViolation = { id: string; impact?: string | null; help: string; helpUrl: string; nodes: AxeNode[] };

/**
 * The axe rules whose outcome depends on colours: the only ones a dark scheme can change (the
 * layout and the markup are the same in both), so the dark pass runs these alone.
 */
const COLOUR_RULES = ['color-contrast', 'link-in-text-block'];

/** axe-core's rules on the whole document (or only `rules`), violations only. */
async function runAxe(page: Page, rules?: string[]): Promise<AxeViolation[]> {
  const injected = await page.evaluate(() => 'axe' in window);
  if (!injected) {
    // Inline script: the context is created with bypassCSP, as svc's CSP rightly allows none.
    await page.addScriptTag({ content: axe.source });
  }
  return page.evaluate(async (rules) => {
    const engine = (window as unknown as { axe: { run: (context: Document, options: unknown) => Promise<{ violations: AxeViolation[] }> } })
      .axe;
    const results = await engine.run(document, {
      resultTypes: ['violations'],
      ...(rules ? { runOnly: { type: 'rule', values: rules } } : {}),
    });
    return results.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      helpUrl: v.helpUrl,
      nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  }, rules);
}

/** axe's violations as findings: serious and critical ones fail, the rest are information. */
function axeFindings(violations: AxeViolation[]): Finding[] {
  return violations.map((v) => {
    const targets = v.nodes.map((n) => targetText(n.target));
    if (FAILING_IMPACTS.has(v.impact ?? '')) {
      // What axe measured on the first element (a contrast ratio and its colours, say), in one line.
      const firstFailure = (v.nodes[0]?.failureSummary ?? '').replace(/\s+/g, ' ').trim();
      return { kind: 'axe', rule: v.id, impact: v.impact ?? 'unknown', help: v.help, helpUrl: v.helpUrl, targets, firstFailure };
    }
    return { kind: 'info', detail: `axe ${v.id} (${v.impact ?? 'no impact'}) on ${targets.length} element(s): ${v.help}` };
  });
}

/** A selector of axe's (nested arrays for frames and shadow roots) as one string. */
function targetText(target: unknown[]): string {
  return target.map((part) => (Array.isArray(part) ? part.join(' >>> ') : String(part))).join(' >>> ');
}

/**
 * The layout checks, in the page: every rendered `td` whose content is wider than the cell
 * (unless the cell scrolls on purpose), a chip cut beside others, a table heading or a short
 * value cut on a wide screen, the console's content area narrower than the room it has, every rendered `[data-identifier]` element that takes more than
 * one line, and whether the document scrolls sideways (information).
 */
function layoutFindings(page: Page) {
  return page.evaluate(() => {
    const squash = (text: string | null, max = 80) => {
      const one = (text ?? '').replace(/\s+/g, ' ').trim();
      return one.length > max ? `${one.slice(0, max - 1)}…` : one;
    };
    /** An element as a short selector: the nearest data-testid around it (if any), then its tag and classes. */
    const short = (el: Element) => {
      const named = el.closest('[data-testid]');
      const own = `${el.tagName.toLowerCase()}${[...el.classList].map((c) => `.${c}`).join('')}`;
      if (named === el) {
        return `${own}[data-testid="${named.getAttribute('data-testid')}"]`;
      }
      return named ? `[data-testid="${named.getAttribute('data-testid')}"] ${own}` : own;
    };
    const describeCell = (td: HTMLTableCellElement) => {
      const row = td.parentElement as HTMLTableRowElement;
      const table = td.closest('table');
      const headerRow = table?.tHead?.rows[0];
      // The column's heading, or the row's own (a table of name / value rows).
      const header = headerRow?.cells[td.cellIndex]?.textContent ?? row.querySelector('th')?.textContent ?? '';
      const tableName = table ? short(table) : 'table';
      return `${tableName} row ${row.rowIndex} col ${td.cellIndex + 1}${header ? ` "${squash(header, 30)}"` : ''}`;
    };

    const overflows: { cell: string; text: string; scrollWidth: number; clientWidth: number }[] = [];
    const cells = [...document.querySelectorAll('td')];
    let renderedCells = 0;
    for (const td of cells) {
      if (td.getClientRects().length === 0) {
        continue;
      }
      renderedCells++;
      const style = getComputedStyle(td);
      if (/^(auto|scroll)$/.test(style.overflowX)) {
        continue;
      }
      if (td.scrollWidth > td.clientWidth + 1) {
        overflows.push({ cell: describeCell(td), text: squash(td.textContent), scrollWidth: td.scrollWidth, clientWidth: td.clientWidth });
        continue;
      }
      // A box inside the cell (a status pill, a button) cut off by a clipping wrapper: the cell
      // itself does not overflow, but the box reaches past the cell's content edge. Ellipsized
      // text is fine (its own box fits; the text inside it is cut with an ellipsis).
      const edge = td.getBoundingClientRect().right - Number.parseFloat(style.paddingRight) - Number.parseFloat(style.borderRightWidth);
      for (const el of td.querySelectorAll('*')) {
        const display = getComputedStyle(el).display;
        if (!/^(inline-block|inline-flex|block|flex|grid)$/.test(display) || el.getClientRects().length === 0) {
          continue;
        }
        const right = el.getBoundingClientRect().right;
        if (right > edge + 1) {
          overflows.push({
            cell: `${describeCell(td)} ${short(el)}`,
            text: squash(el.textContent),
            scrollWidth: Math.round(right - td.getBoundingClientRect().left),
            clientWidth: Math.round(edge - td.getBoundingClientRect().left),
          });
          break;
        }
      }
    }

    // Chips (components/chips.tsx): a shown chip is never cut while another could give way to
    // "+N more"; only the one chip of a cell too narrow for it may end in an ellipsis.
    for (const chips of document.querySelectorAll('.chips')) {
      const shown = [...chips.querySelectorAll<HTMLElement>(':scope > code')].filter((c) => c.getClientRects().length > 0);
      const cut = shown.filter((c) => c.scrollWidth > c.clientWidth + 1);
      if (shown.length > 1 && cut.length > 0) {
        const td = chips.closest('td');
        overflows.push({
          cell: `${td ? describeCell(td) : short(chips)} chip cut`,
          text: squash(cut[0]?.textContent ?? ''),
          scrollWidth: cut[0]?.scrollWidth ?? 0,
          clientWidth: cut[0]?.clientWidth ?? 0,
        });
      }
    }

    const wraps: { element: string; text: string; rects: number; height: number; lineHeight: number }[] = [];
    const identifiers = [...document.querySelectorAll('[data-identifier]')];
    let renderedIdentifiers = 0;
    for (const el of identifiers) {
      const rects = el.getClientRects().length;
      if (rects === 0) {
        // Not rendered (display: none, a closed <details>): nothing on screen to wrap.
        continue;
      }
      renderedIdentifiers++;
      const style = getComputedStyle(el);
      // `normal` is the font's own line gap: about 1.2 em for the fonts in use.
      const lineHeight = style.lineHeight === 'normal' ? Number.parseFloat(style.fontSize) * 1.2 : Number.parseFloat(style.lineHeight);
      const height = el.getBoundingClientRect().height;
      if (rects !== 1 || height > 1.5 * lineHeight) {
        wraps.push({
          element: short(el),
          text: squash(el.textContent),
          rects,
          height: Math.round(height),
          lineHeight: Math.round(lineHeight * 10) / 10,
        });
      }
    }

    // Not a check (nothing marks these as identifiers yet): inline code that wraps, a list of
    // candidates for data-identifier in the findings file.
    const codeWraps: string[] = [];
    for (const el of document.querySelectorAll('code:not([data-identifier] code, [data-identifier])')) {
      const rects = el.getClientRects().length;
      const style = getComputedStyle(el);
      if (rects === 0 || style.display === 'block') {
        continue;
      }
      const lineHeight = style.lineHeight === 'normal' ? Number.parseFloat(style.fontSize) * 1.2 : Number.parseFloat(style.lineHeight);
      if (rects > 1 || el.getBoundingClientRect().height > 1.5 * lineHeight) {
        codeWraps.push(`${short(el)} "${squash(el.textContent, 40)}"`);
      }
    }

    // Nothing short is cut while the page is wide (1024 px and more): a table's heading, a short
    // value (a time, a role, an IP address) or a short identifier ends in an ellipsis only on a
    // narrower screen. Long values (emails, user agents, URLs) may give way, with their whole text
    // on hover.
    const SHORT = 24;
    if (window.innerWidth >= 1024) {
      for (const th of document.querySelectorAll<HTMLElement>('table.data-table--fixed th')) {
        if (th.getClientRects().length > 0 && th.scrollWidth > th.clientWidth + 1) {
          overflows.push({
            cell: `heading cut: ${short(th)}`,
            text: squash(th.textContent),
            scrollWidth: th.scrollWidth,
            clientWidth: th.clientWidth,
          });
        }
      }
      for (const el of document.querySelectorAll<HTMLElement>('td .data-table__cell, td .data-table__cell > div')) {
        const text = (el.textContent ?? '').replace(/\s+/g, ' ').trim();
        if (el.getClientRects().length === 0 || el.scrollWidth <= el.clientWidth + 1) {
          continue;
        }
        const td = el.closest('td') as HTMLTableCellElement;
        if (text.length <= SHORT) {
          overflows.push({ cell: `short value cut: ${describeCell(td)}`, text, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth });
        } else if (!el.closest('[title]') && !el.querySelector('[title]')) {
          // A long value (an 80-character email) may give way, but never without its whole text on hover.
          overflows.push({
            cell: `cut without a tooltip: ${describeCell(td)}`,
            text: squash(text),
            scrollWidth: el.scrollWidth,
            clientWidth: el.clientWidth,
          });
        }
      }
      for (const start of document.querySelectorAll<HTMLElement>('td [data-identifier] .identifier__start')) {
        const text = start.closest('[data-identifier]')?.textContent ?? '';
        if (start.getClientRects().length > 0 && text.length <= 16 && start.scrollWidth > start.clientWidth + 1) {
          const td = start.closest('td') as HTMLTableCellElement;
          overflows.push({
            cell: `short identifier cut: ${describeCell(td)}`,
            text,
            scrollWidth: start.scrollWidth,
            clientWidth: start.clientWidth,
          });
        }
      }
    }

    // The console's content area takes the width beside the navigation (nothing cut while space sits empty).
    const main = document.querySelector('.shell__main');
    const nav = document.querySelector('.shell__nav');
    if (main && nav && window.innerWidth >= 1024) {
      const room = window.innerWidth - nav.getBoundingClientRect().width;
      const width = main.getBoundingClientRect().width;
      if (width < Math.min(room, 1760) - 2) {
        overflows.push({
          cell: 'the content area leaves room unused',
          text: `${Math.round(width)} of ${Math.round(room)} px`,
          scrollWidth: Math.round(room),
          clientWidth: Math.round(width),
        });
      }
    }

    const scrollWidth = document.documentElement.scrollWidth;
    const sideways =
      scrollWidth > window.innerWidth + 1 ? `the document scrolls sideways: ${scrollWidth} px wide at ${window.innerWidth}` : undefined;
    return { overflows, wraps, codeWraps, sideways, counted: { identifiers: renderedIdentifiers, cells: renderedCells } };
  });
}

/** A crash of the console: its error boundaries, which replace the page with "failed to load". */
async function crashFindings(page: Page, pageErrors: string[]): Promise<Finding[]> {
  const boundaries = await page.evaluate(() =>
    [...document.querySelectorAll('[data-testid="route-error"], [data-testid="root-error"]')].map(
      (el) => `${el.getAttribute('data-testid')}: ${(el.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 200)}`,
    ),
  );
  return [...boundaries, ...pageErrors.map((e) => `uncaught exception: ${e.split('\n')[0]}`)].map((detail) => ({ kind: 'crash', detail }));
}

/**
 * Checks the page as it is now at every width in VIEWPORTS (the first is the one it was opened
 * at): settle, axe, layout, screenshot `pages/<who>-<name>-<width>.png`. Leaves the page at the
 * first width again. `pageErrors` are the page's uncaught exceptions so far (emptied here).
 */
export async function checkPage(
  page: Page,
  opts: { who: string; name: string; requests: { inFlight: () => number }; pageErrors: string[] },
): Promise<PageResult[]> {
  const results: PageResult[] = [];
  for (const [index, viewport] of VIEWPORTS.entries()) {
    const current = page.viewportSize();
    if (current?.width !== viewport.width || current.height !== viewport.height) {
      await page.setViewportSize(viewport);
      await nextFrames(page);
    }
    const findings: Finding[] = [];
    const unsettled = await settle(page, opts.requests, index === 0 ? QUIET_MS : QUIET_AFTER_RESIZE_MS);
    if (unsettled) {
      findings.push({ kind: 'not-settled', detail: unsettled });
    }
    findings.push(...(await crashFindings(page, opts.pageErrors.splice(0))));
    findings.push(...axeFindings(await runAxe(page)));
    const layout = await layoutFindings(page);
    findings.push(...layout.overflows.map((o) => ({ kind: 'overflow' as const, ...o })));
    findings.push(...layout.wraps.map((w) => ({ kind: 'identifier-wrap' as const, ...w })));
    if (layout.sideways) {
      // A page wider than a phone's screen fails it (the desktop width is the tables' business).
      findings.push(
        viewport.width < 1024
          ? { kind: 'overflow', cell: 'the document scrolls sideways', text: layout.sideways, scrollWidth: 0, clientWidth: viewport.width }
          : { kind: 'info', detail: layout.sideways },
      );
    }
    if (layout.codeWraps.length > 0) {
      findings.push({ kind: 'info', detail: `inline code without data-identifier wraps: ${layout.codeWraps.join('; ')}` });
    }
    const screenshot = await saveScreenshot(page, `pages/${opts.who}-${opts.name}-${viewport.width}`);
    results.push({
      who: opts.who,
      page: opts.name,
      url: page.url(),
      width: viewport.width,
      scheme: 'light',
      screenshot,
      counted: layout.counted,
      findings,
    });

    // The same view in the dark scheme: only the colours change, so only axe's colour rules run.
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      await nextFrames(page);
      const dark = axeFindings(await runAxe(page, COLOUR_RULES));
      const darkShot = await saveScreenshot(page, `pages/${opts.who}-${opts.name}-${viewport.width}-dark`);
      results.push({
        who: opts.who,
        page: opts.name,
        url: page.url(),
        width: viewport.width,
        scheme: 'dark',
        screenshot: darkShot,
        counted: { identifiers: 0, cells: 0 },
        findings: dark,
      });
    } finally {
      await page.emulateMedia({ colorScheme: 'light' });
    }
  }
  await page.setViewportSize(VIEWPORTS[0]);
  return results;
}

/** The findings that fail a page, one line each, for the test's failure message. */
export function failures(results: PageResult[]): string[] {
  const lines: string[] = [];
  for (const r of results) {
    const at = `${r.who} ${r.page} @${r.width}${r.scheme === 'dark' ? ' dark' : ''}`;
    for (const f of r.findings) {
      switch (f.kind) {
        case 'axe':
          lines.push(`${at}: axe ${f.rule} (${f.impact}) ${f.help} -> ${f.targets.join(' | ')} [first: ${f.firstFailure}]`);
          break;
        case 'overflow':
          lines.push(`${at}: cell overflows: ${f.cell} scrollWidth ${f.scrollWidth} > clientWidth ${f.clientWidth} "${f.text}"`);
          break;
        case 'identifier-wrap':
          lines.push(`${at}: identifier wraps: ${f.element} ${f.rects} box(es), ${f.height}px tall, line ${f.lineHeight}px "${f.text}"`);
          break;
        case 'not-settled':
        case 'crash':
          lines.push(`${at}: ${f.kind}: ${f.detail}`);
          break;
        case 'info':
          break;
      }
    }
  }
  return lines;
}

/** Writes every result of the run to e2e/artifacts/pages/findings.json (the report is made from it). */
export function writeFindings(results: PageResult[], extra: Record<string, unknown>): string {
  mkdirSync(PAGES_ARTIFACTS_DIR, { recursive: true });
  const file = path.join(PAGES_ARTIFACTS_DIR, 'findings.json');
  writeFileSync(file, `${JSON.stringify({ ...extra, results }, null, 2)}\n`);
  return file;
}
