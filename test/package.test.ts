/**
 * The package as a user gets it from the registry. The tree is copied (without node_modules,
 * dist/ and .git: a clean checkout) into a temporary directory, `npm pack` there runs the
 * `prepack` build and packs, and the tarball is installed with `npm install --offline` into a
 * scratch project next to it. Then, against that installed copy only:
 *
 * - what it ships: dist/ with its declarations, the sources the source maps point at, the licence;
 * - every source map (`.js.map` and `.d.ts.map`) names sources that are inside the package;
 * - each entry point loads with `import` and with `require()` (Node >= 20.19 loads an ES module
 *   that way), with the same exports;
 * - the README's "In five minutes" program, saved as app.mjs and run with node, prints what the
 *   README says it prints; so does it on Bun and Deno (when given, see support/runtimes.ts), and
 *   bundled by esbuild for the browser (which fails on any `node:` import: the root entry loads
 *   nothing Node-only, SPEC 14) in headless Chromium;
 * - test/fixtures/consumer/consumer.ts compiles strictly with skipLibCheck off, so a declaration
 *   that refers to something stripped from dist/ (an @internal type), or a wrong use that compiles
 *   (each is marked @ts-expect-error there), fails.
 *
 * No network: the scratch project depends on the tarball and on qmux's runtime dependencies as
 * `file:` links into this repository's node_modules (they have no dependencies of their own), and
 * npm runs with `--offline` and an empty cache of its own in the temporary directory. The packing
 * happens in the copy, so the repository's dist/ (which other test files use meanwhile) is never
 * rebuilt under them.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserRequired, hasChromium, launchChromium, NO_CHROMIUM } from './browser.js';
import { OTHER_RUNTIMES, runtimeMissingNotice, runtimesRequired } from './support/runtimes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; dependencies: Record<string, string> };

/**
 * What a user imports, and names each must export (a floor: the test also checks that `import`
 * and `require()` agree on the full list). Add a subpath export here to have it checked the same way.
 */
const ENTRY_POINTS: { specifier: string; names: string[] }[] = [
  {
    specifier: 'qmux',
    names: [
      'Worker',
      'Strategy',
      'Registry',
      'Queue',
      'PriorityQueue',
      'Topic',
      'createAdminHandler',
      'setDefaultStrategy',
      'QmuxError',
      'TimeoutError',
    ],
  },
];

/** Top-level entries the tarball may hold; anything else (tests, configs, benchmarks) is a packing mistake. */
const SHIPPED = ['LICENSE', 'README.md', 'dist', 'package.json', 'src'];

/** The whole setup (copy, pack with its build, install) measures 5-10 s alone; a loaded 2-core CI machine gets headroom. */
const SETUP_TIMEOUT_MS = 120_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], cwd: string, timeout = 60_000): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { cwd, timeout, maxBuffer: 10 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** npm itself: the one running `npm test` when there is one (its CLI script), else the `npm` on PATH. */
function npm(args: string[], cwd: string): Promise<Run> {
  const cli = process.env.npm_execpath;
  return cli !== undefined && /\.[cm]?js$/.test(cli) ? run(process.execPath, [cli, ...args], cwd) : run('npm', args, cwd);
}

function expectOk(result: Run, what: string): void {
  expect(result.code, `${what} failed:\n${result.stdout}\n${result.stderr}`).toBe(0);
}

/** stderr less the ExperimentalWarning some Node versions print for require(esm). */
const stderrOf = (result: Run): string =>
  result.stderr
    .split('\n')
    .filter((line) => line.trim() !== '' && !/ExperimentalWarning|--trace-warnings/.test(line))
    .join('\n');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The first fenced block of `lang` after `from` in `text`, and where it ends. */
function fenced(text: string, lang: string, from: number): { code: string; end: number } {
  const open = text.indexOf(`\`\`\`${lang}\n`, from);
  if (open < 0) throw new Error(`no \`\`\`${lang} block after offset ${from}`);
  const start = open + lang.length + 4;
  const close = text.indexOf('\n```', start);
  return { code: text.slice(start, close + 1), end: close + 4 };
}

/** The README's "In five minutes" program and the output it promises. */
function fiveMinutes(): { program: string; output: string } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.indexOf('\n## In five minutes\n');
  expect(section).toBeGreaterThan(0);
  const program = fenced(readme, 'js', section);
  const output = fenced(readme, 'text', program.end);
  expect(readme.indexOf('\n## ', section + 1)).toBeGreaterThan(output.end); // both inside the section
  return { program: program.code, output: output.code };
}

/**
 * Runs `script` (an ES module) in a page of headless Chromium served from loopback, and returns
 * what it logged, a line per `console.log`, once it has logged its last line ("done").
 */
async function printedInChromium(script: string): Promise<string> {
  const server = createServer((req, res) => {
    if (req.url === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script type="module" src="/app.js"></script>');
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { browser, close } = await launchChromium();
  try {
    const page = await browser.newPage();
    const logged: string[] = [];
    const errors: string[] = [];
    let finished: () => void = () => {};
    const done = new Promise<void>((resolve) => (finished = resolve));
    page.on('console', (message) => {
      logged.push(message.text());
      if (message.text() === 'done') finished();
    });
    page.on('pageerror', (error) => {
      errors.push(String(error));
      finished();
    });
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await done;
    expect(errors).toEqual([]);
    return logged.map((line) => `${line}\n`).join('');
  } finally {
    await close();
    server.close();
  }
}

let work = '';
let project = '';
let installed = '';

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'qmux-pack-'));
  const checkout = join(work, 'checkout');
  const skip = new Set(['node_modules', 'dist', '.git', 'docs', 'tmp'].map((name) => join(ROOT, name)));
  cpSync(ROOT, checkout, { recursive: true, filter: (source) => !skip.has(resolve(source)) });
  symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'), 'dir');
  const cache = join(work, 'npm-cache');
  const out = join(work, 'out');
  mkdirSync(out);
  expectOk(await npm(['pack', '--pack-destination', out, '--cache', cache, '--no-audit', '--no-fund'], checkout), 'npm pack');
  const tarballs = readdirSync(out).filter((file) => file.endsWith('.tgz'));
  expect(tarballs).toHaveLength(1);

  project = join(work, 'project');
  mkdirSync(project);
  const dependencies: Record<string, string> = { [PKG.name]: `file:${join(out, tarballs[0]!)}` };
  for (const name of Object.keys(PKG.dependencies)) dependencies[name] = `file:${join(ROOT, 'node_modules', name)}`;
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies }, null, 2));
  expectOk(await npm(['install', '--offline', '--no-audit', '--no-fund', '--cache', cache], project), 'npm install of the tarball');
  installed = join(project, 'node_modules', PKG.name);
}, SETUP_TIMEOUT_MS);

afterAll(() => {
  if (work !== '') rmSync(work, { recursive: true, force: true });
});

describe('the packed package, installed from its tarball', () => {
  it('ships dist/ (built by prepack from a clean checkout), its sources and the licence, and nothing else', () => {
    expect(readdirSync(installed).sort()).toEqual(SHIPPED);
    for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/shell/worker.js', 'src/index.ts', 'src/shell/worker.ts']) {
      expect(existsSync(join(installed, file)), file).toBe(true);
    }
    expect(existsSync(join(installed, 'src', 'tsconfig.json'))).toBe(false);
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
  });

  it("has every source map's sources inside the package", () => {
    const maps = filesUnder(join(installed, 'dist')).filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(10);
    expect(maps.some((file) => file.endsWith('.d.ts.map'))).toBe(true);
    for (const map of maps) {
      const { sources, sourceRoot = '' } = JSON.parse(readFileSync(map, 'utf8')) as { sources: string[]; sourceRoot?: string };
      expect(sources.length, map).toBeGreaterThan(0);
      for (const source of sources) {
        const target = resolve(dirname(map), sourceRoot, source);
        const inside = relative(installed, target);
        expect(inside.startsWith(`..${sep}`) || inside === '..', `${relative(installed, map)} -> ${source}`).toBe(false);
        expect(existsSync(target), `${relative(installed, map)} -> ${source}`).toBe(true);
      }
    }
  });

  it.each(ENTRY_POINTS)('$specifier loads with import and with require(), with the same exports', async ({ specifier, names }) => {
    const list = 'console.log(JSON.stringify(Object.keys(m).sort()))';
    writeFileSync(join(project, 'esm.mjs'), `import * as m from ${JSON.stringify(specifier)};\n${list};\n`);
    writeFileSync(join(project, 'cjs.cjs'), `const m = require(${JSON.stringify(specifier)});\n${list};\n`);
    const esm = await run(process.execPath, ['esm.mjs'], project);
    const cjs = await run(process.execPath, ['cjs.cjs'], project);
    expectOk(esm, 'import');
    expectOk(cjs, 'require');
    expect(stderrOf(esm)).toBe('');
    expect(stderrOf(cjs)).toBe('');
    const exported = JSON.parse(esm.stdout) as string[];
    expect(exported).toEqual(expect.arrayContaining(names));
    expect(JSON.parse(cjs.stdout)).toEqual(exported);
  });

  it('runs a worker from require(), as a CommonJS user would', async () => {
    writeFileSync(
      join(project, 'worker.cjs'),
      [
        "const { Worker, Strategy } = require('qmux');",
        "const worker = new Worker((job) => job.source + ':' + job.data, { concurrency: 1, strategy: Strategy.RoundRobin });",
        "const a = worker.bindQueue({ name: 'a' });",
        "const b = worker.bindQueue({ name: 'b' });",
        'const done = [];',
        "worker.on('completed', (_job, result) => done.push(result));",
        'a.addAll([1, 2]);',
        'b.add(3);',
        "worker.waitUntilIdle().then(() => console.log(done.join(' ')));",
        '',
      ].join('\n'),
    );
    const result = await run(process.execPath, ['worker.cjs'], project);
    expectOk(result, 'worker.cjs');
    expect(result.stdout).toBe('a:1 b:3 a:2\n');
  });

  it('runs the README\'s "In five minutes" program and prints what the README shows', async () => {
    const { program, output } = fiveMinutes();
    writeFileSync(join(project, 'app.mjs'), program);
    const result = await run(process.execPath, ['app.mjs'], project);
    expectOk(result, 'app.mjs');
    expect(result.stdout).toBe(output);
  });

  it.each(OTHER_RUNTIMES)('runs the README\'s "In five minutes" program on $name and prints what the README shows', async (runtime) => {
    if (runtime.binary === undefined && !runtimesRequired) {
      console.warn(runtimeMissingNotice(runtime));
      return;
    }
    expect(runtime.binary, runtimeMissingNotice(runtime)).toBeDefined();
    const { program, output } = fiveMinutes();
    writeFileSync(join(project, 'app.mjs'), program);
    const result = await run(runtime.binary as string, runtime.args('app.mjs'), project);
    expectOk(result, `${runtime.name} app.mjs`);
    expect(result.stdout).toBe(output);
  });

  it('bundles the README\'s "In five minutes" program for the browser, and it prints there what the README shows', async () => {
    const { program, output } = fiveMinutes();
    writeFileSync(join(project, 'browser-app.mjs'), program);
    // The root entry loads nothing a browser lacks (SPEC 14): esbuild fails on any `node:` import.
    const { build } = await import('esbuild');
    const bundle = await build({
      entryPoints: [join(project, 'browser-app.mjs')],
      absWorkingDir: project,
      bundle: true,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
    });
    expect(bundle.errors).toEqual([]);
    const script = bundle.outputFiles[0]!.text;
    expect(script).not.toMatch(/from\s*["']node:/);
    if (!hasChromium()) {
      if (browserRequired) throw new Error(NO_CHROMIUM);
      console.warn(NO_CHROMIUM);
      return;
    }
    const printed = await printedInChromium(script);
    expect(printed).toBe(output);
  }, 60_000);

  it("type-checks each of docs/recipes.md's recipes (complete programs, it says) in a strict project against the installed declarations", async () => {
    const recipes = readFileSync(join(ROOT, 'docs', 'recipes.md'), 'utf8');
    expect(recipes.startsWith('# Recipes\n')).toBe(true);
    const files: string[] = [];
    for (let at = 0; ; ) {
      const open = recipes.indexOf('```ts\n', at);
      if (open < 0) break;
      const block = fenced(recipes, 'ts', open);
      const file = `recipe-${files.length + 1}.ts`;
      writeFileSync(join(project, file), block.code);
      files.push(file);
      at = block.end;
    }
    expect(files.length).toBeGreaterThanOrEqual(6);
    const consumer = join(ROOT, 'test', 'fixtures', 'consumer');
    writeFileSync(
      join(project, 'tsconfig.recipes.json'),
      JSON.stringify({ extends: join(consumer, 'tsconfig.json'), compilerOptions: { typeRoots: [join(ROOT, 'node_modules', '@types')] }, files }),
    );
    const result = await run(process.execPath, [TSC, '-p', 'tsconfig.recipes.json'], project);
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('type-checks a strict user project against the installed declarations, rejecting the wrong uses', async () => {
    const consumer = join(ROOT, 'test', 'fixtures', 'consumer');
    cpSync(join(consumer, 'consumer.ts'), join(project, 'consumer.ts'));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        // The fixture's options (strict, skipLibCheck off); @types/node from this repository.
        extends: join(consumer, 'tsconfig.json'),
        compilerOptions: { typeRoots: [join(ROOT, 'node_modules', '@types')] },
        files: ['consumer.ts'],
      }),
    );
    const result = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--listFiles'], project);
    // --listFiles prints the program's files, one absolute path a line; anything else is a diagnostic.
    const lines = result.stdout.split('\n').filter((line) => line !== '');
    expect(lines.filter((line) => !line.startsWith(sep)).join('\n') + result.stderr).toBe('');
    expect(result.code).toBe(0);
    // The declarations come from the installed package, not from this repository's dist/.
    expect(lines).toContain(join(installed, 'dist', 'index.d.ts'));
    expect(lines.filter((line) => line.startsWith(join(ROOT, 'dist')))).toEqual([]);
  });
});

describe('thread handlers in an ES module package and in a CommonJS one (npm init -y), with and without tsx', () => {
  /** A `.ts` handler that only needs its types erased, and one that needs more (an enum). */
  const HANDLERS: Record<string, string> = {
    'erasable.ts': 'export default function square({ n }: { n: number }): number {\n  return n * n;\n}\n',
    'enum.ts':
      'enum Factor {\n  One = 1,\n  Two = 2,\n}\nexport default function double({ n }: { n: number }): number {\n  return n * Factor.Two;\n}\n',
  };
  /** Runs each handler on a threads worker and prints what each job ended with. */
  const RUN = [
    "import { Worker } from 'qmux';",
    'const out = {};',
    `for (const file of ${JSON.stringify(Object.keys(HANDLERS))}) {`,
    "  const worker = new Worker(new URL('./' + file, import.meta.url), { concurrency: 1 });",
    '  try {',
    '    out[file] = await worker.bindQueue().add({ n: 3 }).result();',
    '  } catch (error) {',
    "    out[file] = error.name + ': ' + error.message;",
    '  }',
    '  await worker.stop();',
    '}',
    'console.log(JSON.stringify(out));',
    '',
  ].join('\n');

  /**
   * A project of `kind` holding a copy of the installed package (so that qmux resolves tsx from
   * this project, where it is only when `withTsx`) and its runtime dependencies.
   */
  function app(kind: 'esm' | 'cjs', withTsx: boolean): string {
    const dir = join(work, `${kind}-${withTsx ? 'tsx' : 'plain'}`);
    const modules = join(dir, 'node_modules');
    mkdirSync(join(modules, PKG.name), { recursive: true });
    cpSync(join(installed, 'package.json'), join(modules, PKG.name, 'package.json'));
    cpSync(join(installed, 'dist'), join(modules, PKG.name, 'dist'), { recursive: true });
    const links = [...Object.keys(PKG.dependencies), ...(withTsx ? ['tsx'] : [])];
    for (const name of links) symlinkSync(join(ROOT, 'node_modules', name), join(modules, name), 'dir');
    // What `npm init -y` writes has no "type": a CommonJS package.
    const pkg = kind === 'esm' ? { name: 'app', version: '1.0.0', type: 'module' } : { name: 'app', version: '1.0.0', main: 'index.js' };
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
    for (const [file, code] of Object.entries(HANDLERS)) writeFileSync(join(dir, file), code);
    writeFileSync(join(dir, 'run.mjs'), RUN);
    return dir;
  }

  /** Whether this Node strips types itself (22.18+ by default): `process.features.typescript` is then set. */
  const nodeStripsTypes = typeof (process.features as { typescript?: unknown }).typescript === 'string';
  const hint = (file: string, why: RegExp | ''): RegExp =>
    new RegExp(
      `^TypeError: qmux: the handler file://\\S+/${file.replace('.', '\\.')} is TypeScript${why === '' ? '' : why.source}: install tsx, or compile the handler to JavaScript and point at that$`,
    );

  for (const kind of ['esm', 'cjs'] as const) {
    it(`${kind === 'esm' ? 'an ES module' : 'a CommonJS'} package with tsx: every .ts handler runs`, async () => {
      const result = await run(process.execPath, ['run.mjs'], app(kind, true));
      expectOk(result, 'run.mjs');
      expect(JSON.parse(result.stdout)).toEqual({ 'erasable.ts': 9, 'enum.ts': 6 });
    });

    it(`${kind === 'esm' ? 'an ES module' : 'a CommonJS'} package without tsx: Node's type stripping runs what it can, the rest gets qmux's hint`, async () => {
      const result = await run(process.execPath, ['run.mjs'], app(kind, false));
      expectOk(result, 'run.mjs');
      const out = JSON.parse(result.stdout) as Record<string, unknown>;
      if (nodeStripsTypes) {
        expect(out['erasable.ts']).toBe(9);
        expect(out['enum.ts']).toMatch(hint('enum.ts', / that Node's type stripping cannot run \(.*enum.*\)/));
      } else {
        expect(out['erasable.ts']).toMatch(hint('erasable.ts', ''));
        expect(out['enum.ts']).toMatch(hint('enum.ts', ''));
      }
    });
  }

  it("runs docs/recipes.md's threads recipe (CPU work in threads) as written in a CommonJS package, its main compiled by TypeScript", async () => {
    const recipes = readFileSync(join(ROOT, 'docs', 'recipes.md'), 'utf8');
    const section = recipes.indexOf('\n## CPU work in threads\n');
    expect(section).toBeGreaterThan(0);
    const handler = fenced(recipes, 'js', section);
    const main = fenced(recipes, 'ts', handler.end);
    expect(recipes.indexOf('\n## ', section + 1)).toBeGreaterThan(main.end); // both inside the section
    const name = /^\/\/ (\S+):/.exec(handler.code)?.[1];
    expect(name).toBe('primes.mjs');
    const dir = join(work, 'cjs-recipe');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'recipe', version: '1.0.0', main: 'index.js' }, null, 2));
    symlinkSync(join(project, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, name as string), handler.code);
    const compiled = ts.transpileModule(main.code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
    writeFileSync(join(dir, 'main.mjs'), compiled.outputText);
    const result = await run(process.execPath, ['main.mjs'], dir);
    expectOk(result, 'main.mjs');
    expect(result.stdout).toBe(`${/console\.log\(.*\); \/\/ (\d+) primes/.exec(main.code)?.[1]}\n`);
  });
});
