/**
 * The package as a user gets it: test/fixtures/consumer/consumer.ts imports 'qmux' by name (the
 * package's own "exports", so the built dist/ and its declarations) and is compiled strictly with
 * skipLibCheck off. A declaration that refers to something stripped from dist/, or a wrong use
 * that compiles (each is marked @ts-expect-error there), fails this test.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

describe('the published package', () => {
  it('compiles a strict user project against dist/ declarations, rejecting the wrong uses', async () => {
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      execFile(process.execPath, [TSC, '-p', 'test/fixtures/consumer'], { cwd: ROOT, timeout: 60_000 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, output: stdout + stderr });
      });
    });
    expect(result.output).toBe('');
    expect(result.code).toBe(0);
  }, 70_000);
});
