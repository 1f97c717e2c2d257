/**
 * Compile errors that name the cause (issue 33): a misspelt worker option, a key method on a
 * queue without keys, `delay` with `runAt`. Compiles test/fixtures/type-messages/wrong-uses.ts
 * against the built declarations (dist/) and checks that each line marked `// error: <text>` has
 * an error containing that text, and that no other line has one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('./fixtures/type-messages/wrong-uses.ts', import.meta.url));
const BUILT = fileURLToPath(new URL('../dist/index.d.ts', import.meta.url));

beforeAll(() => {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run \`npm run build\` first (npm test does)`);
});

/** The fixture's compile errors: line (0-based) to the flattened messages on it. */
function errorsByLine(): Map<number, string[]> {
  const program = ts.createProgram([FIXTURE], {
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
  });
  const errors = new Map<number, string[]>();
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    expect(diagnostic.file?.fileName, ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')).toBe(FIXTURE);
    const { line } = (diagnostic.file as ts.SourceFile).getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    errors.set(line, [...(errors.get(line) ?? []), ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')]);
  }
  return errors;
}

describe('compile errors of wrong uses', () => {
  it('name the option, the missing keys or the exclusive pair, on the marked lines only', () => {
    const lines = readFileSync(FIXTURE, 'utf8').split('\n');
    const errors = errorsByLine();
    const expected = new Map<number, string>();
    for (const [at, line] of lines.entries()) {
      const marker = /^\/\/ error: (.*)$/.exec(line.trim());
      if (marker !== null) expected.set(at + 1, marker[1] as string);
    }
    expect(expected.size).toBe(8);
    for (const [line, text] of expected) {
      const found = errors.get(line) ?? [];
      expect(
        found.some((message) => message.includes(text)),
        `line ${line + 1}: ${lines[line]}\nerrors: ${found.join('\n')}`,
      ).toBe(true);
    }
    const unexpected = [...errors].filter(([line]) => !expected.has(line)).map(([line, messages]) => `line ${line + 1}: ${messages.join('\n')}`);
    expect(unexpected).toEqual([]);
  });
});
