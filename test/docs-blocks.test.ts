/**
 * Every fenced `ts` / `js` block of README.md and docs/*.md compiles. A block is a complete
 * program unless its info string says `fragment` (```ts fragment): complete blocks are written to
 * a scratch folder inside this package and type-checked together, as one strict TypeScript
 * program (JavaScript blocks with checkJs), importing `qmux`, `qmux/bullmq` and `qmux/otel`
 * through the package's self-reference, so against dist/ (run `npm run build` first). Fragments
 * (a few lines lifted from a larger program, or a signature) are counted and must at least parse.
 *
 * The relative links of those files must point at a file that exists and, with a `#anchor`, at a
 * heading of it (typedoc checks the files but not the anchors between guides).
 *
 * This checks every block, those test/package.test.ts also runs (the README's five-minute program,
 * the threads recipe) or type-checks against the installed tarball (the recipes) included.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** One fenced code block: where it is, its language, and whether it is marked as a fragment. */
interface Block {
  file: string;
  line: number;
  lang: 'ts' | 'js';
  fragment: boolean;
  code: string;
}

/** The `ts` / `js` blocks of one markdown file, in order. Other languages are skipped. */
function blocksOf(file: string): Block[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split(/\r?\n/);
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(.*)$/.exec(lines[i] as string);
    if (open === null) continue;
    const close = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (close < 0) throw new Error(`${file}:${i + 1}: a fence that is never closed`);
    const lang = open[1];
    if (lang === 'ts' || lang === 'js') {
      const flags = (open[2] as string).trim().split(/\s+/).filter(Boolean);
      const unknown = flags.filter((flag) => flag !== 'fragment');
      if (unknown.length > 0) throw new Error(`${file}:${i + 1}: unknown info string word(s) ${unknown.join(', ')} (only "fragment")`);
      blocks.push({ file, line: i + 1, lang, fragment: flags.includes('fragment'), code: `${lines.slice(i + 1, close).join('\n')}\n` });
    }
    i = close;
  }
  return blocks;
}

const MARKDOWN = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const BLOCKS = MARKDOWN.flatMap(blocksOf);
const complete = BLOCKS.filter((block) => !block.fragment);
const fragments = BLOCKS.filter((block) => block.fragment);
const where = (block: Block) => `${block.file}:${block.line}`;

// Inside the package (the scratch folder is git-ignored), so that `qmux` resolves to this package
// through its own `exports`, and the peers' types come from its node_modules.
mkdirSync(join(ROOT, 'tmp'), { recursive: true });
const scratch = mkdtempSync(join(ROOT, 'tmp', 'docs-blocks-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the code blocks of README.md and docs/*.md', () => {
  it('are found and counted: complete programs, and the fragments marked as such', () => {
    expect(MARKDOWN.length).toBeGreaterThan(10);
    expect(complete.length).toBeGreaterThanOrEqual(16);
    // The count, so a change in it shows in the log.
    console.info(`docs blocks: ${complete.length} complete programs, ${fragments.length} fragments, in ${MARKDOWN.length} files`);
  });

  it('complete programs type-check, all of them in one strict program against dist/', () => {
    const files = complete.map((block, i) => {
      const name = join(scratch, `${block.file.replace(/[/.]/g, '-')}-${block.line}-${i}.${block.lang === 'ts' ? 'mts' : 'mjs'}`);
      writeFileSync(name, block.code);
      return { name, block };
    });
    const program = ts.createProgram(
      files.map((f) => f.name),
      {
        target: ts.ScriptTarget.ES2022,
        lib: ['lib.es2022.d.ts'],
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        strict: true,
        allowJs: true,
        checkJs: true,
        noEmit: true,
        skipLibCheck: true,
      },
    );
    const byFile = new Map(files.map((f) => [f.name, f.block]));
    const messages = ts.getPreEmitDiagnostics(program).map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      if (d.file === undefined || d.start === undefined) return text;
      const block = byFile.get(d.file.fileName);
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      return `${block === undefined ? relative(ROOT, d.file.fileName) : `${block.file}:${block.line + 1 + line}`}: ${text}`;
    });
    expect(messages).toEqual([]);
  }, 120_000);

  it.each(fragments.map((block) => [where(block), block] as const))('the fragment at %s parses', (_where, block) => {
    const out = ts.transpileModule(block.code, {
      fileName: `fragment.${block.lang === 'ts' ? 'mts' : 'mjs'}`,
      reportDiagnostics: true,
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, allowJs: true },
    });
    expect((out.diagnostics ?? []).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  });
});

/** The anchors of a markdown file's headings, as GitHub makes them (fenced blocks skipped). */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(join(ROOT, file), 'utf8').split(/\r?\n/)) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (heading === null) continue;
    anchors.add(
      (heading[1] as string)
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    );
  }
  return anchors;
}

describe('the links of README.md and docs/*.md', () => {
  it.each(MARKDOWN)('%s: every relative link names a file that exists, and a heading of it', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target as string)) continue; // https:, mailto:
      const [path, anchor] = (target as string).split('#') as [string, string | undefined];
      const into = path === '' ? file : relative(ROOT, join(ROOT, dirname(file), path));
      if (!existsSync(join(ROOT, into))) broken.push(`${target}: no file ${into}`);
      else if (anchor !== undefined && !anchorsOf(into).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${into}`);
      // typedoc's anchors collapse runs of dashes, GitHub's do not: a heading whose anchor has one
      // works in one of the two only.
      else if (anchor?.includes('--')) broken.push(`${target}: an anchor with "--" differs between GitHub and typedoc`);
    }
    expect(broken).toEqual([]);
  });
});
