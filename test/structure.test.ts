/**
 * The shape of the source tree (SPEC 12, issue 31): no import cycle in `src/`, type-only imports
 * included; the core (`src/core/`) imports only itself and the public types (`src/api/`), which
 * import only each other; no source file over 600 lines. Each failure names the files and the
 * imports to move.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cycles, edgesWithin, type Import, importGraph } from './support/import-graph.js';

const SRC = fileURLToPath(new URL('../src', import.meta.url));
const graph = importGraph(SRC);

/** Most lines a source file may have. */
const MAX_LINES = 600;
/** `from -> to` for each import of a file under `folder` that `allowed` refuses. */
function refused(folder: string, allowed: (edge: Import) => boolean): string[] {
  const lines: string[] = [];
  for (const [file, imports] of graph) {
    if (!file.startsWith(folder)) continue;
    for (const edge of imports) if (!allowed(edge)) lines.push(`${file} -> ${edge.target}${edge.typeOnly ? ' (type)' : ''}`);
  }
  return lines;
}

describe('the import graph of src/', () => {
  it('is read whole: every folder of the layers, and imports of every kind', () => {
    for (const folder of ['api/', 'core/', 'core/due/', 'core/keys/', 'shell/', 'sources/', 'handles/', 'observe/', 'ops/', 'strategies/']) {
      expect(
        [...graph.keys()].some((file) => file.startsWith(folder) && !file.slice(folder.length).includes('/')),
        folder,
      ).toBe(true);
    }
    const edges = [...graph.values()].flat();
    expect(edges.some((edge) => !edge.external && edge.typeOnly)).toBe(true);
    expect(edges.some((edge) => !edge.external && !edge.typeOnly)).toBe(true);
    // A dynamic import: `ioredis` is only ever loaded by `await import('ioredis')`.
    expect(edges.some((edge) => edge.external && !edge.typeOnly && edge.target === 'ioredis')).toBe(true);
    // Every relative import resolves to a file that was read: none can slip past the checks below.
    expect(edges.filter((edge) => !edge.external && !graph.has(edge.target)).map((edge) => edge.target)).toEqual([]);
  });

  it('finds a cycle when there is one, type-only imports included', () => {
    const edge = (target: string, typeOnly = false): Import => ({ target, external: false, typeOnly });
    const looped = new Map([
      ['a.ts', [edge('b.ts')]],
      ['b.ts', [edge('c.ts', true)]],
      ['c.ts', [edge('a.ts', true)]],
      ['d.ts', [edge('a.ts'), edge('d.ts')]],
    ]);
    expect(cycles(looped)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['d.ts']]);
    expect(edgesWithin(looped, ['a.ts', 'b.ts', 'c.ts'])).toEqual(['a.ts -> b.ts', 'b.ts -> c.ts (type)', 'c.ts -> a.ts (type)']);
  });

  it('has no cycle, type-only imports included', () => {
    const found = cycles(graph).map((component) => `${component.length} files:\n  ${edgesWithin(graph, component).join('\n  ')}`);
    expect(found, `import cycles in src/ (break each by moving code to a lower layer):\n${found.join('\n')}`).toEqual([]);
  });

  it('has the core import only itself and the public types (src/api/), and no package', () => {
    const lines = refused('core/', (edge) => !edge.external && (edge.target.startsWith('core/') || edge.target.startsWith('api/')));
    expect(lines, `imports of the core from outside core/ and api/:\n${lines.join('\n')}`).toEqual([]);
  });

  it('has the public types import only each other, and of packages only the types of Node built-ins', () => {
    const lines = refused('api/', (edge) => (edge.external ? edge.typeOnly && edge.target.startsWith('node:') : edge.target.startsWith('api/')));
    expect(lines, `imports of api/ from outside it:\n${lines.join('\n')}`).toEqual([]);
  });
});

describe('the files of src/', () => {
  const lengths = new Map([...graph.keys()].map((file) => [file, readFileSync(`${SRC}/${file}`, 'utf8').split('\n').length - 1]));

  it(`have at most ${MAX_LINES} lines`, () => {
    const over = [...lengths].filter(([, lines]) => lines > MAX_LINES).map(([file, lines]) => `${file}: ${lines} lines`);
    expect(over, `source files over ${MAX_LINES} lines (split them by concern):\n${over.join('\n')}`).toEqual([]);
  });
});
