import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Every tracked file a maintainer reads: code, SQL, scripts and the docs themselves. */
function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z', '--', '*.ts', '*.tsx', '*.mjs', '*.js', '*.sql', '*.sh', '*.md', '.ci/run'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => f !== '' && !f.startsWith('bench/results/') && existsSync(path.join(ROOT, f)));
}

/** A document name as code and docs cite it: `docs/api.md`, `README.md`, `architecture.md` (beside the citing page, at the root or in docs/). */
const CITATION = /(?<![\w./-])((?:\.{1,2}\/|[\w-]+\/)*[\w-]+\.md)\b/g;
/** `docs/architecture.md section 5`: the numbered section must exist. */
const SECTION = /\b(docs\/[\w-]+\.md) section (\d+)/g;
/** `docs/api.md "Usage"`: a heading of that name must exist. */
const HEADING = /\b(docs\/[\w-]+\.md),? "([^"]+)"/g;

/** Where a cited name is found: beside the citing file, at the root, or in docs/. */
function resolves(from: string, cited: string): string | null {
  const candidates = cited.includes('/')
    ? [path.join(ROOT, path.dirname(from), cited), path.join(ROOT, cited)]
    : [path.join(ROOT, path.dirname(from), cited), path.join(ROOT, cited), path.join(ROOT, 'docs', cited)];
  return candidates.find((c) => existsSync(c)) ?? null;
}

/** A document's headings, and the bold run-in labels that open a paragraph (`**Retention.** ...`). */
function headingsOf(file: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(path.join(ROOT, file), 'utf8').split('\n')) {
    if (line.startsWith('#')) {
      out.push(line.replace(/^#+\s*/, '').trim());
    }
    const label = /^(?:- )?\*\*([^*]+)\*\*/.exec(line);
    if (label?.[1]) {
      out.push(label[1].replace(/[.:]$/, ''));
    }
  }
  return out;
}

/**
 * The repository explains itself (docs/conventions.md section 6): every document a comment or a
 * page cites is in the repository, and a cited section or heading exists in it. A document
 * outside the repository, renamed or never written fails here with the file that cites it.
 */
describe('documents cited in the repository', () => {
  const files = trackedFiles();

  it('every cited document exists in the repository', () => {
    const missing: string[] = [];
    for (const file of files) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      for (const [, cited] of text.matchAll(CITATION)) {
        if (cited && !resolves(file, cited)) {
          missing.push(`${file}: ${cited}`);
        }
      }
    }
    expect(files.length).toBeGreaterThan(100);
    expect(missing).toEqual([]);
  });

  it('every cited section number and heading exists in its document', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const text = readFileSync(path.join(ROOT, file), 'utf8').replace(/\s*\n\s*(?:\*|\/\/|--)?\s*/g, ' ');
      for (const [, doc, section] of text.matchAll(SECTION)) {
        if (doc && existsSync(path.join(ROOT, doc)) && !headingsOf(doc).some((h) => h.startsWith(`${section}.`))) {
          wrong.push(`${file}: ${doc} section ${section}`);
        }
      }
      for (const [, doc, heading] of text.matchAll(HEADING)) {
        if (
          doc &&
          existsSync(path.join(ROOT, doc)) &&
          !headingsOf(doc).some((h) => h.toLowerCase().includes((heading ?? '').toLowerCase()))
        ) {
          wrong.push(`${file}: ${doc} "${heading}"`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
