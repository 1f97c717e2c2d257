/**
 * The shipped declarations against each `@types/node` a user may have (SPEC 14): a plain
 * `npm i -D @types/node` installs 26 today, while services pin 20, 22 or 24. For each major, a
 * scratch project under the system's temp directory gets the built dist/ declarations as its
 * `qmux` package and that major as its only `@types/node` (the dev dependencies `@types/node` and
 * `@types/node-22`, `-24`, `-26`, aliases pinned to exact versions), and tsc checks a small
 * program in it with `skipLibCheck: false`, so a declaration that names something a major lacks
 * (as `TransferListItem`, gone in 26) fails. With `skipLibCheck: true` (tsc's default in new
 * projects) such a name silently becomes `any`: the program also asserts that the `transfer`
 * option is not `any` and rejects what cannot be transferred (a `@ts-expect-error` that goes
 * unused fails the check). Types resolve the same with either setting, so one run per major
 * covers both.
 *
 * The declarations are copied from dist/ (npm test builds it first) rather than packed: packing
 * and installing is what test/package.test.ts does once; here only the types vary.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** Each `@types/node` major and the dev dependency that holds it. */
const TYPES: { major: number; dependency: string }[] = [
  { major: 20, dependency: '@types/node' },
  { major: 22, dependency: '@types/node-22' },
  { major: 24, dependency: '@types/node-24' },
  { major: 26, dependency: '@types/node-26' },
];

/** A user's program: `transfer` takes what can be moved, is not `any`, and rejects a string. */
const PROGRAM = `import { Worker, type AddOptions, type ThreadTransferable } from 'qmux';

type IsAny<T> = 0 extends 1 & T ? true : false;
export const transferIsAny: IsAny<NonNullable<AddOptions['transfer']>> = false;
export const itemIsAny: IsAny<ThreadTransferable> = false;

const worker = new Worker<{ buffer: ArrayBuffer }, number>(new URL('./sum.mjs', import.meta.url), { concurrency: 1 });
const queue = worker.bindQueue();
const buffer = new ArrayBuffer(8);
queue.add({ buffer }, { transfer: [buffer] });
// @ts-expect-error: a string cannot be transferred
queue.add({ buffer }, { transfer: ['buffer'] });
`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function tsc(project: string, config: string): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [TSC, '-p', config, '--listFiles'],
      { cwd: project, timeout: 60_000, maxBuffer: 10 * 1024 * 1024 },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
      },
    );
  });
}

let work = '';

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'qmux-declarations-'));
  // The package as installed, declarations only: package.json (its `exports` name the types) and dist/*.d.ts.
  const installed = join(work, 'node_modules', 'qmux');
  mkdirSync(installed, { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(installed, 'package.json'));
  cpSync(join(ROOT, 'dist'), join(installed, 'dist'), {
    recursive: true,
    filter: (source) => !/\.(js|map)$/.test(source),
  });
  // Its runtime dependencies' declarations, as npm would install them beside it.
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const name of Object.keys(pkg.dependencies)) symlinkSync(join(ROOT, 'node_modules', name), join(work, 'node_modules', name), 'dir');
  writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  writeFileSync(join(work, 'consumer.ts'), PROGRAM);
  for (const { major, dependency } of TYPES) {
    // A folder of type roots that holds only this major, as `node`.
    const roots = join(work, `types-${major}`);
    mkdirSync(roots);
    symlinkSync(join(ROOT, 'node_modules', dependency), join(roots, 'node'), 'dir');
    const compilerOptions = {
      target: 'ES2022',
      lib: ['ES2022'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      types: ['node'],
      typeRoots: [roots],
    };
    writeFileSync(join(work, `tsconfig-${major}.json`), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }));
  }
});

afterAll(() => {
  if (work !== '') rmSync(work, { recursive: true, force: true });
});

describe('the shipped declarations in a strict project, against each @types/node', () => {
  for (const { major, dependency } of TYPES) {
    it(`@types/node ${major}: compiles with skipLibCheck off, and transfer is typed`, async () => {
      const installedTypes = JSON.parse(readFileSync(join(ROOT, 'node_modules', dependency, 'package.json'), 'utf8')) as { version: string };
      expect(installedTypes.version.split('.')[0]).toBe(String(major));
      const result = await tsc(work, `tsconfig-${major}.json`);
      // --listFiles prints the program's files, one absolute path a line; anything else is a diagnostic.
      const lines = result.stdout.split('\n').filter((line) => line !== '');
      expect(lines.filter((line) => !line.startsWith('/')).join('\n') + result.stderr).toBe('');
      expect(result.code).toBe(0);
      // The program saw this major's @types/node and the copied declarations, nothing from the repository's dist/.
      expect(lines).toContain(join(work, 'node_modules', 'qmux', 'dist', 'index.d.ts'));
      expect(lines.some((line) => line.includes(`/node_modules/${dependency}/worker_threads.d.ts`))).toBe(true);
      expect(lines.filter((line) => line.startsWith(join(ROOT, 'dist')))).toEqual([]);
    });
  }
});
