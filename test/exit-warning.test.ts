/**
 * No silent exit (SPEC 2): when the process is about to exit (`beforeExit`) while a worker has
 * waiting jobs it may not start, qmux warns, once per worker and status. The scenarios run in a
 * child process against the built library (test/fixtures/exit-scenarios.mjs).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../src/index.js';
import { runNode } from './helpers.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/exit-scenarios.mjs', import.meta.url));
const BUILT = fileURLToPath(new URL('../dist/index.js', import.meta.url));
/** Generous: a loaded 2-core CI machine can be slow to start node. */
const BOUND_MS = 20_000;

interface Exit {
  code: number | null;
  killed: boolean;
  lines: unknown[];
  /** The QmuxWarning lines of stderr, without the `(node:pid) ` prefix. */
  warnings: string[];
  stderr: string;
}

async function run(scenario: string): Promise<Exit> {
  const { code, killed, stdout, stderr } = await runNode([SCRIPT, scenario], BOUND_MS);
  const lines = stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line): unknown => JSON.parse(line));
  const warnings = stderr
    .split('\n')
    .filter((line) => line.includes('QmuxWarning'))
    .map((line) => line.replace(/^\(node:\d+\) \[QMUX_STRANDED_JOBS\] /, ''));
  return { code, killed, lines, warnings, stderr };
}

beforeAll(() => {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run \`npm run build\` first (npm test does)`);
});

describe('the beforeExit warning', () => {
  it('names a paused worker, its status and its waiting jobs (due and delayed); a paused worker holds no timer', async () => {
    const result = await run('paused-delayed');
    expect(result.killed, result.stderr).toBe(false);
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ beforeExit: 1 }]);
    expect(result.warnings).toEqual([
      'QmuxWarning: worker "paused-one" is paused with 2 waiting jobs that it may not start, and the process is about to exit ' +
        'without running them; call resume() to run them (or purge() their sources to drop them)',
    ]);
  });

  it('warns for a worker that was never started', async () => {
    const result = await run('initiated');
    expect(result.code).toBe(0);
    expect(result.warnings).toEqual([
      'QmuxWarning: worker "never-started" is initiated with 3 waiting jobs that it may not start, and the process is about to exit ' +
        'without running them; call start() to run them (or purge() their sources to drop them)',
    ]);
  });

  it('warns for a running worker whose every waiting job sits in a paused key, saying to resume the keys', async () => {
    const result = await run('paused-key');
    expect(result.killed, result.stderr).toBe(false);
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ status: 'running', waiting: 2, active: 1 }, { beforeExit: 1 }]);
    expect(result.warnings).toEqual([
      'QmuxWarning: worker "tenants" is running with 2 waiting jobs that it may not start, and the process is about to exit ' +
        'without running them; call resumeKey(key) on their queues for the paused keys ("jobs": "acme") to run them (or purge() their sources to drop them)',
    ]);
  });

  it('names resumeKey too for a paused worker whose waiting jobs sit in paused keys', async () => {
    const result = await run('paused-worker-paused-keys');
    expect(result.killed, result.stderr).toBe(false);
    expect(result.code).toBe(0);
    expect(result.warnings).toEqual([
      'QmuxWarning: worker "tenants-paused" is paused with 5 waiting jobs that it may not start, and the process is about to exit ' +
        'without running them; call resume() and resumeKey(key) on their queues for the paused keys ("jobs": "a", "b", "c" and more) ' +
        'to run them (or purge() their sources to drop them)',
    ]);
  });

  it('does not warn about a paused key when some waiting job is in a key that is not paused', async () => {
    const result = await run('paused-key-and-other-work');
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ running: 1, waiting: 2 }, { beforeExit: 1 }]);
    expect(result.warnings).toEqual([]);
  });

  it('says nothing for a stop the user asked for: stopping with a handler that never settles, or stopped with jobs waiting', async () => {
    const result = await run('stopping');
    expect(result.killed, result.stderr).toBe(false);
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ status: 'stopping', waiting: 2 }, { beforeExit: 1 }]);
    expect(result.stderr).toBe('');
    const stopped = await run('stopped-on-purpose');
    expect(stopped.code).toBe(0);
    expect(stopped.lines).toEqual([{ status: 'stopped', waiting: 3 }, { beforeExit: 1 }]);
    expect(stopped.stderr).toBe('');
  });

  it('says nothing after registry.shutdown(), even when a handler outlived its timeout', async () => {
    const result = await run('shutdown');
    expect(result.killed, result.stderr).toBe(false);
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ stopped: ['calm'], unfinished: ['stubborn'], waiting: 4 }, { beforeExit: 1 }]);
    expect(result.stderr).toBe('');
  });

  it('warns for a halted worker', async () => {
    const result = await run('halted');
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ halted: 'halted' }, { beforeExit: 1 }]);
    expect(result.warnings).toEqual([
      'QmuxWarning: worker "broken" is halted with 2 waiting jobs that it may not start, and the process is about to exit ' +
        'without running them; fix the broken invariant (see health()) and call start() to run them (or purge() their sources to drop them)',
    ]);
  });

  it('says nothing when the work completed, nor for paused or stopped workers with nothing waiting', async () => {
    const result = await run('completed');
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ beforeExit: 1 }]);
    expect(result.stderr).toBe('');
  });

  it('comes once per worker and status: not again in the same state, again in a new one', async () => {
    const result = await run('once-per-status');
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ beforeExit: 3 }]);
    expect(result.warnings.map((line) => line.replace(/ with .*/, ''))).toEqual([
      'QmuxWarning: worker "twice" is paused',
      'QmuxWarning: worker "twice" is running',
    ]);
  });

  it('uses one process listener for every worker: a hundred workers add one, and no MaxListenersExceededWarning', async () => {
    const result = await run('hundred');
    expect(result.code).toBe(0);
    expect(result.lines).toEqual([{ listenersAdded: 1 }, { beforeExit: 1 }]);
    expect(result.warnings).toHaveLength(2);
    expect(result.stderr).not.toMatch(/MaxListeners/);
  });
});

describe('the beforeExit listener', () => {
  it('is shared: making workers in this process adds at most one listener in all', () => {
    const before = process.listenerCount('beforeExit');
    for (let i = 0; i < 100; i++) new Worker(() => undefined, { autoRun: false }).bindQueue().add(i);
    expect(process.listenerCount('beforeExit') - before).toBeLessThanOrEqual(1);
    const after = process.listenerCount('beforeExit');
    for (let i = 0; i < 100; i++) new Worker(() => undefined);
    expect(process.listenerCount('beforeExit')).toBe(after);
  });
});
