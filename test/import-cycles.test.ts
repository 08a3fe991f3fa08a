import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * No import cycles, type-only imports included (issue 16): a module's dependencies can be read
 * top-down. The graph is every relative `import`/`export ... from` of the sources (tests
 * excluded); a strongly connected component of more than one module is a cycle.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const SOURCES = ['apps/api/src', 'apps/console/src', 'packages/contracts/src', 'packages/db/src', 'packages/jobs/src'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) {
      return name === 'node_modules' ? [] : sourceFiles(file);
    }
    return /\.tsx?$/.test(name) && !/\.(test|d)\.ts$/.test(name) ? [file] : [];
  });
}

function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/g)]
      .map((m) => path.resolve(path.dirname(file), m[1] as string))
      .filter((target) => known.has(target));
    graph.set(file, targets);
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one module. */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      for (let w = stack.pop(); w !== undefined; w = stack.pop()) {
        onStack.delete(w);
        component.push(path.relative(ROOT, w));
        if (w === v) {
          break;
        }
      }
      if (component.length > 1) {
        found.push(component.sort());
      }
    }
  };
  for (const v of graph.keys()) {
    if (!index.has(v)) {
      visit(v);
    }
  }
  return found;
}

describe('import cycles', () => {
  it('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cycles(graph).map((c) => c.map((f) => path.basename(f)))).toEqual([['a', 'b', 'c']]);
  });

  for (const dir of SOURCES) {
    it(`${dir} has none, type-only imports included`, () => {
      const files = sourceFiles(path.join(ROOT, dir));
      expect(files.length).toBeGreaterThan(3);
      expect(cycles(importGraph(files))).toEqual([]);
    });
  }
});
