/**
 * Races in the thread pool (SPEC 6, 7, 8): a timeout or cancel as a task ends, progress of an
 * attempt that timed out, concurrency lowered below minThreads. Like test/threads.test.ts these use the BUILT
 * library and real worker threads; handlers are in fixtures/threads/. Races are made
 * deterministic by blocking the main thread in a `setImmediate` callback (the check phase): the
 * next loop iteration then runs its expired timers (a job's timeout) before its poll phase
 * delivers the messages the threads sent meanwhile.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../dist/index.js';
import { blockMainThreadLater } from './fixtures/threads/host-helpers.mjs';
import { runNode } from './helpers.js';

const BUILT = new URL('../dist/index.js', import.meta.url);
const fixture = (name: string): URL => new URL(`./fixtures/threads/${name}`, import.meta.url);
const FLOOD = fixture('progress-flood.mjs');
const HOST = fixture('races-host.mjs');

/** Generous bound for a child process to end by itself. */
const EXIT_BOUND_MS = 30_000;

const made: Array<{ name: string; stop(): Promise<void> }> = [];
function track<W extends { name: string; stop(): Promise<void> }>(worker: W): W {
  made.push(worker);
  return worker;
}
afterEach(async () => {
  const workers = made.splice(0);
  await Promise.all(workers.map((worker) => settlesWithin(worker.stop(), 15_000)));
});

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(() => {
  if (!existsSync(BUILT)) throw new Error(`${fileURLToPath(BUILT)} is missing: run \`npm run build\` first`);
});

/** What a scenario of races-host.mjs printed (one JSON line), after checking that it ended well. */
async function hostScenario(name: string): Promise<Record<string, unknown>> {
  const run = await runNode([fileURLToPath(HOST), name], EXIT_BOUND_MS);
  const context = `stdout: ${run.stdout}; stderr: ${run.stderr}; after ${run.ms} ms`;
  expect(run.killed, context).toBe(false);
  expect(run.code, context).toBe(0);
  const lines = run.stdout.split('\n').filter((line) => line.trim() !== '');
  expect(lines, context).toHaveLength(1);
  return JSON.parse(lines[0] as string) as Record<string, unknown>;
}

describe('a timeout or cancel racing the task’s own completion', () => {
  // The handler returns (its result is on its way to the main thread) just before the job's
  // timeout or cancel is handled. Ending the thread then would leave its late result to a pool
  // that has dropped it: tinypool calls that "Unexpected message from Worker" (a pool 'error') and
  // hands the next queued job to the terminating thread, which fails it without running it. The
  // thread and the main thread now take the end of the task from each other (`ABORTING`). SPEC 6:
  // a timeout fails that job only; SPEC 8: 'error' is for faults. (Run in a child process: inside
  // vitest's own process the late result is not delivered in the same order.)
  for (const { scenario, first } of [
    { scenario: 'timeout-races-result', first: 'failed: TimeoutError' },
    { scenario: 'cancel-races-result', first: 'failed: CancelledError' },
  ]) {
    it(`${scenario}: the jobs added as it ends run and succeed, and no pool error is emitted`, async () => {
      expect(await hostScenario(scenario)).toEqual({ scenario, first, next: [2, 3], errors: [], stopped: 'stopped' });
    }, 40_000);
  }
});

describe('concurrency lowered below minThreads', () => {
  // docs/threads.md: "minThreads (kept alive even when idle, default 0, at most concurrency),
  // idleTimeout (ms an idle thread above minThreads lives, default 1000)". tinypool arms a
  // thread's idle timer only when the thread becomes available, so threads already idle within the
  // old minThreads would stay for good: lowering the minimum recycles the pool's threads.
  it('idle threads above the lowered minThreads are released, and raising concurrency again restores minThreads', async () => {
    expect(await hostScenario('lower-concurrency-idle')).toEqual({
      scenario: 'lower-concurrency-idle',
      before: 3,
      idleAfterLowering: 1,
      idleAfterRaising: 3,
      stopped: 'stopped',
    });
  }, 40_000);
});

describe('progress reports of an aborted attempt', () => {
  // docs/jobs.md (Progress): "A report after the job has settled, or between two attempts (from the
  // handler of an attempt that timed out and still runs, say), is ignored". The retry takes the
  // freed cell again, so a report is told from a later task's by the task's own number in the
  // pool, not by the job's (the same for every attempt).
  it('reports attempt 1 sent before its timeout are not recorded while attempt 2 runs', async () => {
    const worker = track(new Worker<number, string>(FLOOD, { concurrency: 1, timeout: 600, retry: { attempts: 2 } }));
    let secondAttemptRunning = false;
    const stale: unknown[] = [];
    worker.on('active', (job) => {
      if (job.attempts === 2) secondAttemptRunning = true;
      else blockMainThreadLater(300, 500); // attempt 1 keeps reporting while the main thread is busy; its timeout expires meanwhile
    });
    worker.on('progress', (_job, value) => {
      if (secondAttemptRunning && (value as { attempt: number }).attempt === 1) stale.push(value);
    });
    const handle = worker.bindQueue().add(1);
    expect(await handle.result()).toBe('done');
    expect({ staleReportsRecordedDuringAttempt2: stale.length, progress: handle.progress }).toEqual({
      staleReportsRecordedDuringAttempt2: 0,
      progress: { attempt: 2, i: 0 },
    });
  }, 30_000);
});

describe('a handler module that fails to load, with a cancel racing the failure', () => {
  it('a cancel handled after a load failure was posted emits no pool error and does not fail the next job with "Terminating worker thread"', async () => {
    const out = await hostScenario('load-failure-races-cancel');
    // The cancel lands before the failure is read, or after (the job then failed first): either way nothing else breaks.
    expect(out.first).toMatch(/^failed: (CancelledError|TypeError)/);
    // Every later job fails as the handler does (it has no default export), not with tinypool's termination.
    expect(out.next).toEqual(['failed: TypeError: qmux: the handler mod', 'failed: TypeError: qmux: the handler mod']);
    expect(out.errors).toEqual([]);
    expect(out.stopped).toBe('stopped');
  }, 40_000);
});

describe('threads recycled after concurrency went below minThreads', () => {
  it('three uncaught-exception crashes after concurrency was lowered below minThreads make the worker degraded', async () => {
    const out = await hostScenario('recycled-thread-crash-counts');
    expect(out.crashes).toEqual(['failed: Error: uncaught 1', 'failed: Error: uncaught 2', 'failed: Error: uncaught 3']);
    expect(out.health).toBe('degraded');
    expect(out.degraded).toBe(1);
    expect(out.errors).toEqual([]);
  }, 40_000);
});
