/**
 * A script whose work is done exits by itself (SPEC 2): run small programs against the built
 * library in a child process and check they end on their own, with code 0. These are the only
 * tests that wait on the real clock.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { runNode } from './helpers.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/exit-scenarios.mjs', import.meta.url));
const BUILT = fileURLToPath(new URL('../dist/index.js', import.meta.url));
/** Generous: a loaded 2-core CI machine can be slow to start node. */
const BOUND_MS = 20_000;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  killed: boolean;
  ms: number;
  lines: unknown[];
  stderr: string;
}

/** Runs one scenario; kills it if it has not exited by itself within BOUND_MS. */
async function run(scenario: string): Promise<Run> {
  const { code, signal, killed, ms, stdout, stderr } = await runNode([SCRIPT, scenario], BOUND_MS);
  const lines = stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line): unknown => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return line; // not one of the script's reports: keep it so the assertion shows it
      }
    });
  return { code, signal, killed, ms, lines, stderr };
}

/**
 * Ended by itself with code 0 and nothing on stderr: not even the warning of SPEC 2 for a worker
 * the script stopped with jobs waiting, since it asked for that stop (test/exit-warning.test.ts).
 */
function expectCleanExit(result: Run): void {
  const context = `stdout: ${JSON.stringify(result.lines)}; stderr: ${result.stderr}; after ${result.ms} ms`;
  expect(result.killed, `still running after ${BOUND_MS} ms; ${context}`).toBe(false);
  expect(result.stderr, context).toBe('');
  expect(result.signal, context).toBeNull();
  expect(result.code, context).toBe(0);
}

beforeAll(() => {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run \`npm run build\` first (npm test does)`);
});

describe('a script exits by itself', () => {
  it('after adding jobs (some delayed, some rate-limited) and awaiting waitUntilIdle()', async () => {
    const result = await run('drain');
    expectCleanExit(result);
    expect(result.lines).toEqual([{ status: 'idle', done: 8 }]);
  });

  it('when its worker is idle and was never stopped', async () => {
    const result = await run('idle');
    expectCleanExit(result);
    expect(result.lines).toEqual([{ status: 'idle', results: [2, 4, 6] }]);
  });

  it('when its worker is stopped with jobs still queued', async () => {
    const result = await run('stopped');
    expectCleanExit(result); // a stop the script asked for: no warning about the jobs it left
    expect(result.lines).toEqual([{ status: 'stopped', ran: 1, pending: 4 }]);
  });

  it('when its worker is stopped with a delayed job far in the future', async () => {
    const result = await run('stopped-with-delayed');
    expectCleanExit(result); // a stop the script asked for: no warning about the jobs it left
    expect(result.lines).toEqual([{ status: 'stopped', pending: 1 }]);
  });

  it('when its only delayed job was cancelled (no leftover timer)', async () => {
    const result = await run('cancelled-delayed');
    expectCleanExit(result);
    expect(result.lines).toEqual([{ status: 'idle', job: 'cancelled' }]);
  });

  it('when its delayed jobs were purged (no leftover timer)', async () => {
    const result = await run('purged-delayed');
    expectCleanExit(result);
    expect(result.lines).toEqual([{ purged: 2, status: 'idle' }]);
  });
});

describe('an outcome a remote source retries keeps the process alive', () => {
  it('until it is recorded and stop() resolves, even through an adapter that holds no connection', async () => {
    const result = await run('remote-outcome-retried');
    expectCleanExit(result);
    expect(result.lines).toEqual([{ stopped: 'stopped', completed: [['j1', 42]] }]);
  });
});

describe('a paused worker with a remote source lets the process end', () => {
  it('even while an outcome it could not record waits to be retried', async () => {
    const result = await run('remote-paused-outcome-unrecorded');
    expectCleanExit(result); // no job waits (its outcome does), so no stranded-jobs warning
    expect(result.lines).toEqual([{ status: 'paused' }]);
  });
});

describe('a pending delayed job keeps the process alive', () => {
  it('until it has run, even when nothing awaits it', async () => {
    const result = await run('delayed-keeps-alive');
    expectCleanExit(result);
    expect(result.lines).toEqual([{ added: true }, { ran: 'late' }]);
    expect(result.ms).toBeGreaterThanOrEqual(150);
  });
});
