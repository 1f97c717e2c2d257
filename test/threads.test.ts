/**
 * Thread-pool mode (SPEC 2, 5, 6, 7) with REAL worker threads. Threads load the compiled entry
 * point, so these tests import the BUILT library (npm test builds dist first). Handlers are the
 * plain .mjs modules in fixtures/threads/. Time bounds are generous: a loaded 2-core machine can
 * take a while to start a thread or a node process, and nothing here asserts a tight duration.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Registry, Strategy, ThreadExitError, ThreadStartError, ThreadTaskError, TimeoutError, Topic, Worker } from '../dist/index.js';
import { SEED_ORDERS, adapterWithHeldClose, fillSeedQueues, runNode as runBoundedNode, type ChildRun } from './helpers.js';
import { MemoryEngine } from './support/memory-engine.js';

const BUILT = new URL('../dist/index.js', import.meta.url);
const fixture = (name: string): URL => new URL(`./fixtures/threads/${name}`, import.meta.url);
const ECHO = fixture('echo.mjs');
const SLOW = fixture('slow.mjs');
const BYTES = fixture('bytes.mjs');
const HANG = fixture('hang.mjs');
const CRASH = fixture('crash.mjs');
const FLAKY = fixture('flaky.mjs');
const HOST = fixture('host.mjs');
const NO_DEFAULT = fixture('no-default.mjs');
const UNCLONEABLE = fixture('uncloneable.mjs');
const START_FAILURE_HOST = fixture('start-failure-host.mjs');
const PRELOAD_THROWS = fixture('preload-throws-in-threads.mjs');
const PRELOAD_EXITS = fixture('preload-exits-in-threads.mjs');
const PRELOAD_HANGS = fixture('preload-hangs-in-threads.mjs');
/** Too little heap for a thread to even load tinypool's entry point (Node 20). */
const TOO_SMALL_TO_START = { maxOldGenerationSizeMb: 4 };

/** Generous bound for a child process to end by itself. */
const EXIT_BOUND_MS = 30_000;

interface Echoed<T = unknown> {
  data: T;
  ctx: { id: string; attempt: number; source: string; key?: string };
  isMainThread: boolean;
  threadId: number;
}

/** Every worker a test makes is stopped afterwards, so no thread outlives its test. */
const made: Array<{ name: string; stop(): Promise<void> }> = [];
function track<W extends { name: string; stop(): Promise<void> }>(worker: W): W {
  made.push(worker);
  return worker;
}
afterEach(async () => {
  const workers = made.splice(0);
  const stopped = await Promise.all(workers.map((worker) => settlesWithin(worker.stop(), 15_000)));
  const stuck = workers.filter((_, i) => !stopped[i]).map((worker) => worker.name);
  // A job that never settles (a lost thread task, say) keeps stop() pending: say so instead of a hook timeout.
  if (stuck.length > 0) throw new Error(`stop() still pending after 15 s for ${stuck.join(', ')}: a running job never settled`);
});

/** Whether `promise` settles within `ms` (without asserting how fast). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The rejection of `promise` (fails if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error & { code?: unknown; exitCode?: unknown }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: unknown; exitCode?: unknown };
  }
  throw new Error('expected the promise to reject');
}

beforeAll(() => {
  if (!existsSync(BUILT)) throw new Error(`${fileURLToPath(BUILT)} is missing: run \`npm run build\` first (npm test does)`);
});

describe('threads worker: construction', () => {
  it('runs the default export (data, ctx) of a module given as a URL, in a worker thread', async () => {
    const worker = track(new Worker<{ n: number }, Echoed<{ n: number }>>(ECHO, { concurrency: 1 }));
    const q = worker.bindQueue({ name: 'inbox' });
    const out = await q.add({ n: 7 }, { id: 'job-7' }).result();
    expect(out.data).toEqual({ n: 7 });
    expect(out.ctx).toEqual({ id: 'job-7', attempt: 1, source: 'inbox' });
    expect(out.isMainThread).toBe(false);
  });

  it('gives a job of a keyed queue its key in ctx.key (SPEC 10)', async () => {
    const worker = track(new Worker<{ tenant: number }, Echoed<{ tenant: number }>>(ECHO, { concurrency: 1 }));
    const q = worker.bindQueue({ name: 'tenants', keys: { by: (data) => data.tenant } });
    const out = await q.add({ tenant: 42 }).result();
    expect(out.ctx.key).toBe('42');
    const plain = await worker.bindQueue().add({ tenant: 1 }).result();
    expect(plain.ctx.key).toBeUndefined();
  });

  it('runs a module given as a file path string, with an explicit pool: "threads"', async () => {
    const worker = track(new Worker<string, Echoed<string>>(fileURLToPath(ECHO), { pool: 'threads', concurrency: 1 }));
    const q = worker.bindQueue();
    const out = await q.add('hello').result();
    expect(out.data).toBe('hello');
    expect(out.ctx.attempt).toBe(1);
    expect(out.ctx.source).toBe(q.name);
    expect(typeof out.ctx.id).toBe('string');
    expect(out.isMainThread).toBe(false);
  });

  it('structured-clones data both ways (Map, Date, nested objects)', async () => {
    const worker = track(new Worker<unknown, Echoed>(ECHO, { concurrency: 1 }));
    const data = { when: new Date(0), map: new Map([['a', [1, 2]]]), nested: { deep: [null, true] } };
    const out = await worker.bindQueue().add(data).result();
    expect(out.data).toEqual(data);
    expect(out.data).not.toBe(data);
  });

  it("throws for pool: 'threads' with a function handler", () => {
    expect(() => new Worker(() => 1, { pool: 'threads' } as never)).toThrow(/threads/);
  });

  it('throws at construction when the handler module does not exist (path or URL)', () => {
    expect(() => new Worker(fileURLToPath(fixture('no-such-handler.mjs')))).toThrow(/does not exist/);
    expect(() => new Worker(fixture('no-such-handler.mjs'))).toThrow(/does not exist/);
  });

  it('throws for minThreads, idleTimeout or resourceLimits on an async worker, naming the option', () => {
    for (const option of [{ minThreads: 1 }, { idleTimeout: 100 }, { resourceLimits: { maxOldGenerationSizeMb: 16 } }]) {
      const name = Object.keys(option)[0] as string;
      expect(() => new Worker(() => 1, option as never)).toThrow(name);
    }
  });

  it('defaults concurrency to os.availableParallelism()', () => {
    const worker = track(new Worker(ECHO, { autoRun: false }));
    expect(worker.concurrency).toBe(availableParallelism());
  });
});

describe('threads worker: dispatch order is the strategy’s', () => {
  /** The seed programs (SPEC 4) on one thread; the order is read from 'active' and from the results. */
  async function takenOrder(strategy: Strategy, ranked: boolean): Promise<string[]> {
    const worker = track(new Worker<string, Echoed<string>>(ECHO, { concurrency: 1, strategy, autoRun: false }));
    const started: string[] = [];
    const finished: string[] = [];
    worker.on('active', (job) => started.push(job.data));
    worker.on('completed', (_job, result) => finished.push(result.data));
    fillSeedQueues(worker, ranked);
    worker.start();
    await worker.waitUntilIdle();
    expect(finished).toEqual(started);
    return started;
  }

  for (const { strategy, ranked, order } of SEED_ORDERS) {
    it(`${strategy}: ${order.join(', ')}`, async () => {
      expect(await takenOrder(Strategy[strategy], ranked)).toEqual(order);
    });
  }
});

describe('threads worker: never more in flight than threads', () => {
  it('numProcessing <= concurrency at all times, and handlers never overlap beyond it in the threads', async () => {
    const concurrency = 2;
    const worker = track(new Worker<{ ms: number; value: number; counter: SharedArrayBuffer }, { value: number }>(SLOW, { concurrency }));
    const counter = new SharedArrayBuffer(8); // [running now, most at once], kept by the handlers
    const seen: number[] = [];
    const look = (): void => void seen.push(worker.numProcessing);
    worker.on('active', look);
    worker.on('completed', look);
    const poll = setInterval(look, 5);
    try {
      const a = worker.bindQueue();
      const b = worker.bindPriorityQueue();
      const handles = [];
      for (let i = 0; i < 6; i++) {
        handles.push(a.add({ ms: 60, value: i, counter }));
        handles.push(b.add({ ms: 40, value: 100 + i, counter }, i));
      }
      const values = (await Promise.all(handles.map((h) => h.result()))).map((r) => r.value);
      expect(values.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105]);
      await worker.waitUntilIdle();
    } finally {
      clearInterval(poll);
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.max(...seen)).toBeLessThanOrEqual(concurrency);
    expect(Math.max(...seen)).toBeGreaterThan(0);
    const cells = new Int32Array(counter);
    expect(Atomics.load(cells, 1)).toBeLessThanOrEqual(concurrency); // most handlers at once, counted in the threads
    expect(Atomics.load(cells, 0)).toBe(0);
    expect(worker.numProcessing).toBe(0);
  });
});

describe('threads worker: transfer', () => {
  it('moves an ArrayBuffer into the thread: the sender’s buffer is detached', async () => {
    const worker = track(new Worker<{ buffer: ArrayBuffer }, { byteLength: number; sum: number }>(BYTES, { concurrency: 1 }));
    const buffer = new ArrayBuffer(1024);
    new Uint8Array(buffer).fill(2);
    const handle = worker.bindQueue().add({ buffer }, { transfer: [buffer] });
    expect(await handle.result()).toEqual({ byteLength: 1024, sum: 2048 });
    expect(buffer.byteLength).toBe(0);
  });

  it('without transfer the buffer is copied and stays usable', async () => {
    const worker = track(new Worker<{ buffer: ArrayBuffer }, { byteLength: number; sum: number }>(BYTES, { concurrency: 1 }));
    const buffer = new Uint8Array(16).fill(1).buffer;
    expect(await worker.bindQueue().add({ buffer }).result()).toEqual({ byteLength: 16, sum: 16 });
    expect(buffer.byteLength).toBe(16);
  });

  it('throws for transfer on an async worker', () => {
    const worker = track(new Worker((job: { data: unknown }) => job.data));
    const q = worker.bindQueue();
    const buffer = new ArrayBuffer(8);
    expect(() => q.add({ buffer }, { transfer: [buffer] })).toThrow(/transfer/);
    expect(buffer.byteLength).toBe(8);
  });
});

describe('threads worker: cancellation and timeouts', () => {
  it('cancel() on a running thread job settles it cancelled, and the next jobs run', async () => {
    const worker = track(new Worker<{ hang?: string; n?: number }, { data: unknown; threadId: number }>(HANG, { concurrency: 1 }));
    const q = worker.bindQueue();
    const running = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    const stuck = q.add({ hang: 'sleep' });
    const after = [q.add({ n: 1 }), q.add({ n: 2 })];
    await running;
    expect(stuck.status).toBe('running');
    stuck.cancel();
    expect(stuck.status).toBe('cancelled');
    expect((await rejection(stuck.result())).name).toBe('CancelledError');
    const results = await Promise.all(after.map((h) => h.result()));
    expect(results.map((r) => r.data)).toEqual([{ n: 1 }, { n: 2 }]);
    await worker.waitUntilIdle();
    expect(worker.numProcessing).toBe(0);
  });

  it('cancel() stops a busy-looping thread too', async () => {
    const worker = track(new Worker<{ hang?: string; n?: number }, { data: unknown }>(HANG, { concurrency: 1 }));
    const q = worker.bindQueue();
    const running = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    const stuck = q.add({ hang: 'spin' });
    const next = q.add({ n: 3 });
    await running;
    stuck.cancel();
    expect(stuck.status).toBe('cancelled');
    expect((await next.result()).data).toEqual({ n: 3 });
  });

  it('a per-job timeout fails a hanging handler with TimeoutError and replaces the thread', async () => {
    const worker = track(
      new Worker<{ hang?: string; n?: number }, { data: unknown; threadId: number }>(HANG, { concurrency: 1, idleTimeout: 60_000 }),
    );
    const q = worker.bindQueue();
    const first = await q.add({ n: 0 }).result(); // the thread the hanging job will run in
    const failed: unknown[] = [];
    worker.on('failed', (_job, error) => failed.push(error));
    const hung = q.add({ hang: 'spin' }, { timeout: 300 });
    const later = [q.add({ n: 1 }), q.add({ n: 2 })];
    const error = await rejection(hung.result());
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.name).toBe('TimeoutError');
    expect(hung.status).toBe('failed');
    const results = await Promise.all(later.map((h) => h.result()));
    expect(results.map((r) => r.data)).toEqual([{ n: 1 }, { n: 2 }]);
    // One thread, reused while idle (idleTimeout 60 s), so a new thread id means it was replaced.
    expect(results[0]!.threadId).not.toBe(first.threadId);
    expect(failed).toEqual([error]);
  });

  it('a worker-level timeout also applies to thread jobs (sleeping handler)', async () => {
    const worker = track(new Worker<{ hang?: string; n?: number }, { data: unknown }>(HANG, { concurrency: 1, timeout: 300 }));
    const q = worker.bindQueue();
    const hung = q.add({ hang: 'sleep' });
    // `next` runs in the thread that replaces the timed-out one; its own timeout leaves room for
    // that thread's start-up on a loaded machine (the per-job option overrides the worker's).
    const next = q.add({ n: 5 }, { timeout: 30_000 });
    expect((await rejection(hung.result())).name).toBe('TimeoutError');
    expect((await next.result()).data).toEqual({ n: 5 });
  });
});

describe('threads worker: failures and crashes', () => {
  it('a handler that throws fails that job only; the thread keeps serving', async () => {
    const worker = track(new Worker<{ kind: string; n?: number }, { ok: unknown }>(CRASH, { concurrency: 1 }));
    const q = worker.bindQueue();
    const bad = q.add({ kind: 'throw', n: 1 });
    const good = [q.add({ kind: 'ok', n: 1 }), q.add({ kind: 'ok', n: 2 })];
    const error = await rejection(bad.result());
    expect(error.message).toContain('boom 1');
    expect((await Promise.all(good.map((h) => h.result()))).map((r) => r.ok)).toEqual([1, 2]);
    expect(worker.health().status).toBe('healthy'); // a throw is not a crash
  });

  it('process.exit(3) in a handler fails that job with ThreadExitError (exitCode 3); the worker keeps going', async () => {
    const worker = track(new Worker<{ kind: string; code?: number; n?: number }, { ok: unknown }>(CRASH, { concurrency: 1 }));
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    const q = worker.bindQueue();
    const exiting = q.add({ kind: 'exit', code: 3 });
    const next = [q.add({ kind: 'ok', n: 1 }), q.add({ kind: 'ok', n: 2 })];
    expect(await settlesWithin(exiting.settled(), 15_000), 'the exiting job never settled').toBe(true);
    const error = await rejection(exiting.result());
    expect(error).toBeInstanceOf(ThreadExitError);
    expect(error.exitCode).toBe(3);
    expect(exiting.status).toBe('failed');
    expect((await Promise.all(next.map((h) => h.result()))).map((r) => r.ok)).toEqual([1, 2]);
    await worker.waitUntilIdle();
    expect(errors).toEqual([]);
    expect(worker.deadLetters.map((entry) => [entry.data, entry.error])).toEqual([[{ kind: 'exit', code: 3 }, error]]);
  });

  it('a thread that exits fails only its own job, not the jobs running in other threads', async () => {
    type Data = { kind: string; code?: number; flag?: SharedArrayBuffer; n?: number };
    const worker = track(new Worker<Data, { ok: unknown }>(CRASH, { concurrency: 2 }));
    const q = worker.bindQueue();
    // The neighbour blocks until released below, so the overlap holds however slow threads start.
    const flag = new SharedArrayBuffer(4);
    const neighbour = q.add({ kind: 'block', flag, n: 1 });
    const started = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    await started;
    const exiting = q.add({ kind: 'exit', code: 7 });
    const error = await rejection(exiting.result());
    expect(error).toBeInstanceOf(ThreadExitError);
    expect(error.exitCode).toBe(7);
    expect(neighbour.status).toBe('running');
    Atomics.store(new Int32Array(flag), 0, 1);
    Atomics.notify(new Int32Array(flag), 0);
    expect((await neighbour.result()).ok).toBe(1);
  });

  it('a handler that blows the heap under resourceLimits fails that job only (ERR_WORKER_OUT_OF_MEMORY)', async () => {
    const worker = track(
      new Worker<{ kind: string; n?: number }, { ok: unknown }>(CRASH, {
        concurrency: 1,
        resourceLimits: { maxOldGenerationSizeMb: 16 },
      }),
    );
    const q = worker.bindQueue();
    const hog = q.add({ kind: 'oom' });
    const next = q.add({ kind: 'ok', n: 9 });
    const error = await rejection(hog.result());
    expect(error.code).toBe('ERR_WORKER_OUT_OF_MEMORY');
    expect(hog.status).toBe('failed');
    expect((await next.result()).ok).toBe(9);
  });

  it('an uncaught exception thrown later by the handler (a timer) kills the thread: its job fails once with it, the thread is replaced, three make the worker degraded', async () => {
    const worker = track(new Worker<{ kind: string; n?: number }, { ok: unknown; threadId: number }>(CRASH, { concurrency: 1, idleTimeout: 60_000 }));
    const failed: unknown[] = [];
    const degraded: unknown[] = [];
    const errors: unknown[] = [];
    worker.on('failed', (_job, error) => failed.push(error));
    worker.on('degraded', (error) => degraded.push(error));
    worker.on('error', (error) => errors.push(error));
    const q = worker.bindQueue();
    const threadIds = [(await q.add({ kind: 'ok', n: 0 }).result()).threadId];
    for (const n of [1, 2, 3]) {
      expect(worker.health().status, `before crash ${n}`).toBe('healthy');
      const crashing = q.add({ kind: 'throw-later', n });
      expect(await settlesWithin(crashing.settled(), 15_000), `crash ${n} never settled`).toBe(true);
      const error = await rejection(crashing.result());
      expect(error.message).toBe(`uncaught ${n}`);
      expect(crashing.status).toBe('failed');
      // The next job runs in a new thread (one thread, reused while idle: idleTimeout 60 s).
      threadIds.push((await q.add({ kind: 'ok', n }).result()).threadId);
    }
    expect(failed.map((error) => (error as Error).message)).toEqual(['uncaught 1', 'uncaught 2', 'uncaught 3']);
    expect(new Set(threadIds).size).toBe(4);
    expect(worker.health().status).toBe('degraded');
    expect(degraded).toEqual([failed[2]]);
    expect(errors).toEqual([]);
    await worker.waitUntilIdle();
    expect(worker.numProcessing).toBe(0);
  });

  it('three thread crashes make the worker degraded and emit "degraded"; it keeps working', async () => {
    const worker = track(
      new Worker<{ kind: string; code?: number; n?: number }, { ok: unknown }>(CRASH, {
        concurrency: 1,
        resourceLimits: { maxOldGenerationSizeMb: 16 },
      }),
    );
    const degraded: unknown[] = [];
    worker.on('degraded', (error) => degraded.push(error));
    const q = worker.bindQueue();
    const crashes = [q.add({ kind: 'exit', code: 3 }), q.add({ kind: 'oom' })];
    const settled = Promise.all(crashes.map((h) => h.settled()));
    expect(await settlesWithin(settled, 15_000), 'a crashed job never settled').toBe(true);
    expect(worker.health().status).toBe('healthy'); // two crashes are not enough
    expect(degraded).toEqual([]);
    const third = q.add({ kind: 'exit', code: 4 });
    const after = q.add({ kind: 'ok', n: 1 });
    const thirdError = await rejection(third.result());
    expect(thirdError).toBeInstanceOf(ThreadExitError);
    expect((await after.result()).ok).toBe(1);
    const health = worker.health();
    expect(health.status).toBe('degraded');
    expect(health.reason).toMatch(/crash/);
    expect(degraded).toHaveLength(1);
    expect(degraded[0]).toBe(thirdError);
  });
  it('a cancel that ends a thread just as it dies of its own uncaught exception emits no pool error (the job is cancelled, once)', async () => {
    const worker = track(new Worker<{ kind: string; n: number }, { ok: unknown }>(CRASH, { concurrency: 1 }));
    const poolErrors: unknown[] = [];
    worker.on('error', (error) => poolErrors.push(error));
    worker.on('progress', (job) => job.cancel());
    const q = worker.bindQueue();
    const names: string[] = [];
    for (let n = 0; n < 40; n++) names.push(await rejection(q.add({ kind: 'progress-then-throw-later', n }).result()).then((e) => (e as Error).name));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Most cancels win. On a loaded machine the thread's uncaught exception may reach the pool
    // before its progress report does: that job then fails with it, as any crash fails its job.
    expect(names.filter((name) => name !== 'CancelledError' && name !== 'Error')).toEqual([]);
    expect(names.filter((name) => name === 'CancelledError').length).toBeGreaterThan(20);
    expect(poolErrors).toEqual([]);
  }, 60_000);

  it.each(['exit-after-return', 'throw-after-return'])(
    'a timer left behind by a job that returned (%s) ends its idle thread, not the next job',
    async (kind) => {
      const worker = track(new Worker<{ kind: string; n?: number }, { ok: unknown }>(CRASH, { concurrency: 1 }));
      const poolErrors: unknown[] = [];
      worker.on('error', (error) => poolErrors.push(error));
      const q = worker.bindQueue();
      expect((await q.add({ kind, n: 1 }).result()).ok).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 300)); // the timer fires while the thread idles
      expect((await q.add({ kind: 'ok', n: 2 }).result()).ok).toBe(2);
      expect(poolErrors).toHaveLength(1); // the idle thread's death, reported as the pool's
      if (kind === 'exit-after-return') {
        // It ran no job when it died: the error does not say it did.
        expect(poolErrors[0]).toBeInstanceOf(ThreadExitError);
        expect((poolErrors[0] as Error).message).toBe('qmux: a worker thread exited with code 0');
      }
    },
  );

  it.each(['throw-null', 'reject-null'])('a handler that fails with null (%s) fails its job, and is retried, as in async mode', async (kind) => {
    const worker = track(new Worker<{ kind: string }, { ok: unknown }>(CRASH, { concurrency: 1, retry: { attempts: 2 } }));
    const events: string[] = [];
    worker.on('retrying', () => events.push('retrying'));
    worker.on('failed', () => events.push('failed'));
    worker.on('completed', () => events.push('completed'));
    const handle = worker.bindQueue().add({ kind });
    const error = await rejection(handle.result());
    expect(error).toBeInstanceOf(ThreadTaskError);
    expect((error as ThreadTaskError).reported).toBe(null);
    expect(handle.status).toBe('failed');
    expect(events).toEqual(['retrying', 'failed']);
    expect(worker.health().status).toBe('healthy'); // a throw, not a crash
  });

  it("a thread crash counts toward degraded for a remote job too (its retry is the engine's, its crash is ours)", async () => {
    const worker = track(new Worker<{ kind: string; code?: number }, { ok: unknown }>(CRASH, { concurrency: 1 }));
    const degraded: unknown[] = [];
    worker.on('degraded', (error) => degraded.push(error));
    const engine = new MemoryEngine();
    worker.bindRemote(engine.adapter<{ kind: string; code?: number }, { ok: unknown }>());
    for (const code of [3, 4, 5]) engine.add({ kind: 'exit', code });
    const deadline = Date.now() + 15_000;
    while (engine.failed.size < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect([...engine.failed.values()].map((failure) => failure.message)).toEqual([3, 4, 5].map((code) => expect.stringContaining(`code ${code}`)));
    expect(worker.health().status).toBe('degraded');
    expect(degraded).toHaveLength(1);
    expect(degraded[0]).toBeInstanceOf(ThreadExitError);
  });
});

describe('threads worker: retries', () => {
  it('a handler failing on attempt 1 succeeds on attempt 2 (ctx.attempt)', async () => {
    const worker = track(
      new Worker<string, { data: string; attempt: number }>(FLAKY, {
        concurrency: 1,
        retry: { attempts: 2, backoff: { type: 'fixed', delay: 10 } },
      }),
    );
    const retrying: number[] = [];
    worker.on('retrying', (job) => retrying.push(job.attempts));
    const handle = worker.bindQueue().add('x');
    expect(await handle.result()).toEqual({ data: 'x', attempt: 2 });
    expect(handle.attempts).toBe(2);
    expect(retrying).toEqual([1]);
  });

  it('a per-job retry override works too, and without retry the job fails', async () => {
    const worker = track(new Worker<string, { data: string; attempt: number }>(FLAKY, { concurrency: 1 }));
    const q = worker.bindQueue();
    expect((await rejection(q.add('no-retry').result())).message).toContain('attempt 1 of no-retry fails');
    expect(await q.add('retry', { retry: { attempts: 3 } }).result()).toEqual({ data: 'retry', attempt: 2 });
  });
});

describe('threads worker: concurrency and thread lifetime', () => {
  type SlowData = { ms: number; value: number; counter?: SharedArrayBuffer };

  it('setConcurrency raises and lowers the number of jobs running at once in threads', async () => {
    const worker = track(new Worker<SlowData, { value: number }>(SLOW, { concurrency: 1 }));
    const counter = new SharedArrayBuffer(8);
    const cells = new Int32Array(counter);
    const seen: number[] = [];
    worker.on('active', () => void seen.push(worker.numProcessing));
    const q = worker.bindQueue();
    const batch = (n: number, ms: number): Promise<unknown> =>
      Promise.all(Array.from({ length: n }, (_, i) => q.add({ ms, value: i, counter }).result()));

    await batch(3, 100);
    expect(Atomics.load(cells, 1)).toBe(1);

    worker.setConcurrency(3);
    expect(worker.concurrency).toBe(3);
    await batch(6, 400);
    expect(Atomics.load(cells, 1)).toBeGreaterThanOrEqual(2); // more than one thread now
    expect(Atomics.load(cells, 1)).toBeLessThanOrEqual(3);
    expect(Math.max(...seen)).toBeLessThanOrEqual(3);

    worker.setConcurrency(1);
    Atomics.store(cells, 1, 0);
    seen.length = 0;
    await batch(3, 100);
    expect(Atomics.load(cells, 1)).toBe(1);
    expect(Math.max(...seen)).toBe(1);
  });

  it('stop() waits for a running thread job, which succeeds; queued jobs stay queued', async () => {
    const worker = track(new Worker<SlowData, { value: number }>(SLOW, { concurrency: 1 }));
    const q = worker.bindQueue();
    const started = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    const running = q.add({ ms: 300, value: 1 });
    const queued = q.add({ ms: 0, value: 2 });
    await started;
    await worker.stop();
    expect(worker.status).toBe('stopped');
    expect(running.status).toBe('succeeded');
    expect((await running.result()).value).toBe(1);
    expect(queued.status).toBe('waiting');
    expect(q.length).toBe(1);
    worker.start();
    expect((await queued.result()).value).toBe(2);
  });

  it('an idle thread is reused within idleTimeout and released after it', async () => {
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
    const keep = track(new Worker<number, Echoed<number>>(ECHO, { concurrency: 1, idleTimeout: 60_000 }));
    const release = track(new Worker<number, Echoed<number>>(ECHO, { concurrency: 1, idleTimeout: 20 }));
    const [kq, rq] = [keep.bindQueue(), release.bindQueue()];
    const [k1, r1] = await Promise.all([kq.add(1).result(), rq.add(1).result()]);
    await sleep(800);
    const [k2, r2] = await Promise.all([kq.add(2).result(), rq.add(2).result()]);
    expect(k2.threadId).toBe(k1.threadId);
    expect(r2.threadId).not.toBe(r1.threadId);
  });
});

describe('threads worker: more sources and signals', () => {
  it('a topic subscription feeds a threads worker; ctx.source is the subscription name', async () => {
    const topic = new Topic<string>();
    const threads = track(new Worker<string, Echoed<string>>(ECHO, { concurrency: 1 }));
    const local = track(new Worker((job: { data: string }) => `local ${job.data}`));
    threads.subscribe(topic, { name: 'orders-in-threads' });
    local.subscribe(topic);
    const handles = topic.publish('order 1');
    expect(handles).toHaveLength(2);
    const results = await Promise.all(handles.map((h) => h.result()));
    const fromThread = results.find((r): r is Echoed<string> => typeof r === 'object');
    expect(fromThread?.data).toBe('order 1');
    expect(fromThread?.ctx.source).toBe('orders-in-threads');
    expect(fromThread?.isMainThread).toBe(false);
    expect(results).toContain('local order 1');
  });

  it('a priority queue feeds a threads worker in priority order', async () => {
    const worker = track(new Worker<string, Echoed<string>>(ECHO, { concurrency: 1, autoRun: false }));
    const order: string[] = [];
    worker.on('active', (job) => order.push(job.data));
    const pq = worker.bindPriorityQueue();
    pq.add('c', 3);
    pq.add('a', 1);
    pq.add('b', 2);
    pq.add('a2', 1);
    worker.start();
    await worker.waitUntilIdle();
    expect(order).toEqual(['a', 'a2', 'b', 'c']);
  });

  it('aborting the add option signal cancels a running thread job; the next job runs', async () => {
    const worker = track(new Worker<{ hang?: string; n?: number }, { data: unknown }>(HANG, { concurrency: 1 }));
    const q = worker.bindQueue();
    const controller = new AbortController();
    const started = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    const stuck = q.add({ hang: 'sleep' }, { signal: controller.signal });
    const next = q.add({ n: 1 });
    await started;
    controller.abort();
    expect(stuck.status).toBe('cancelled');
    expect((await next.result()).data).toEqual({ n: 1 });
  });

  it('Registry.shutdown({ timeout }) ends a busy-looping thread job at the timeout', async () => {
    const worker = track(new Worker<{ hang?: string }, unknown>(HANG, { concurrency: 1, name: 'spinner' }));
    const registry = new Registry();
    registry.add(worker);
    const started = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    const stuck = worker.bindQueue().add({ hang: 'spin' });
    await started;
    const stopped = new Promise<void>((resolve) => worker.once('stopped', () => resolve()));
    expect(await registry.shutdown({ timeout: 300 })).toEqual({ stopped: [], unfinished: ['spinner'] });
    expect(stuck.status).toBe('cancelled');
    expect(await settlesWithin(stopped, 10_000)).toBe(true); // the thread was terminated, the slot freed
    expect(worker.status).toBe('stopped');
    expect(worker.numProcessing).toBe(0);
  });

  it('a timed-out attempt is retried in a fresh thread and can succeed', async () => {
    const worker = track(new Worker<{ blockOnAttempt: number }, { attempt: number }>(HANG, { concurrency: 1 }));
    const retrying: unknown[] = [];
    worker.on('retrying', (_job, error) => retrying.push(error));
    // Attempt 2 starts a fresh thread under the same per-attempt timeout, so the timeout is long
    // enough for a thread's start-up on a loaded machine; attempt 1 blocks on Atomics.wait until
    // then rather than spinning, so waiting costs no core.
    const handle = worker.bindQueue().add({ blockOnAttempt: 1 }, { timeout: 3000, retry: { attempts: 2 } });
    expect((await handle.result()).attempt).toBe(2);
    expect(retrying).toHaveLength(1);
    expect((retrying[0] as Error).name).toBe('TimeoutError');
  });
});

describe('threads worker: bad handler modules and uncloneable values', () => {
  it('a module without a default function export fails each job with a TypeError; nothing crashes', async () => {
    const worker = track(new Worker(NO_DEFAULT, { concurrency: 1 }));
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    const q = worker.bindQueue();
    const [a, b] = [q.add(1), q.add(2)];
    for (const handle of [a, b]) {
      const error = await rejection(handle.result());
      expect(error.name).toBe('TypeError');
      expect(error.message).toMatch(/default export/);
    }
    await worker.waitUntilIdle();
    expect(worker.status).toBe('idle');
    expect(worker.health().status).toBe('healthy');
    expect(errors).toEqual([]);
  });

  it('data that cannot be cloned fails that job only', async () => {
    const worker = track(new Worker<unknown, unknown>(UNCLONEABLE, { concurrency: 1 }));
    const q = worker.bindQueue();
    const bad = q.add({ f: () => 1 });
    const good = q.add({ n: 1 });
    expect((await rejection(bad.result())).name).toBe('DataCloneError');
    expect(await good.result()).toEqual({ n: 1 });
  });

  it('a result that cannot be cloned fails that job only', async () => {
    const worker = track(new Worker<unknown, unknown>(UNCLONEABLE, { concurrency: 1 }));
    const q = worker.bindQueue();
    const bad = q.add({ fn: true });
    const good = q.add({ n: 2 });
    // The thread dies posting the result. Node hands the parent that uncaught DataCloneError as
    // a bare `{}` (Node 20) or as an `Error` with an empty message (Node 22+): the job fails with
    // the documented ThreadTaskError on every Node.
    const error = await rejection(bad.result());
    expect(error).toBeInstanceOf(ThreadTaskError);
    expect((error as ThreadTaskError).reported).toEqual({});
    expect(error.message).toMatch(/result that cannot be structured-cloned/);
    expect(bad.status).toBe('failed');
    expect(await good.result()).toEqual({ n: 2 });
    await worker.waitUntilIdle();
    expect(worker.numProcessing).toBe(0);
  });

  it('a result that cannot be cloned ends its thread, so it counts as a crash: three make the worker degraded', async () => {
    const worker = track(new Worker<unknown, unknown>(UNCLONEABLE, { concurrency: 1 }));
    const degraded: unknown[] = [];
    worker.on('degraded', (error) => degraded.push(error));
    const q = worker.bindQueue();
    const bad = [q.add({ fn: true }), q.add({ fn: true })];
    await Promise.all(bad.map((h) => h.settled()));
    expect(worker.health().status).toBe('healthy');
    const third = q.add({ fn: true });
    const good = q.add({ n: 3 });
    const thirdError = await rejection(third.result());
    expect(thirdError).toBeInstanceOf(ThreadTaskError);
    expect(await good.result()).toEqual({ n: 3 });
    expect(worker.health()).toMatchObject({ status: 'degraded', reason: '3 worker-thread crashes in the last 60 s' });
    expect(degraded).toEqual([thirdError]);
  });
});

describe('threads worker: threads that cannot start', () => {
  /** Runs `node --import <preload> start-failure-host.mjs <scenario>` and reads its one JSON line. */
  async function hostRun(preload: URL, scenario: string): Promise<unknown> {
    const run = await runBoundedNode(['--import', preload.href, fileURLToPath(START_FAILURE_HOST), scenario], EXIT_BOUND_MS);
    const context = `stdout: ${run.stdout}; stderr: ${run.stderr}; after ${run.ms} ms`;
    expect(run.killed, `still running after ${EXIT_BOUND_MS} ms; ${context}`).toBe(false);
    expect(run.code, context).toBe(0);
    expect(run.stderr, context).toBe('');
    const lines = run.stdout.split('\n').filter((line) => line.trim() !== '');
    expect(lines, context).toHaveLength(1);
    return JSON.parse(lines[0] as string) as unknown;
  }

  for (const { preload, how, cause } of [
    { preload: PRELOAD_THROWS, how: 'throws', cause: 'Error: this preload refuses to run in worker threads' },
    {
      preload: PRELOAD_EXITS,
      how: 'calls process.exit(5)',
      cause: 'ThreadExitError: qmux: a worker thread exited with code 5 while it was starting',
    },
  ]) {
    it(`a host --import preload that ${how} in threads: jobs fail with ThreadStartError naming the cause, slots free, a later job runs`, async () => {
      const out = await hostRun(preload, 'cannot-start');
      const failed = {
        name: 'ThreadStartError',
        isThreadStartError: true,
        message: `qmux: the worker thread for this job could not start: ${cause}`,
        cause: cause.slice(cause.indexOf(': ') + 2),
      };
      expect(out).toEqual({
        scenario: 'cannot-start',
        failures: [failed, failed],
        afterFailures: { statuses: ['failed', 'failed'], numProcessing: 0, idle: 'idle' },
        later: 3,
        stopped: 'stopped',
        poolErrors: true, // tinypool's pool error still reaches the worker's 'error' event
      });
    }, 40_000);
  }

  it('after a thread failed to start, crashed threads are made again: the pool is back at minThreads once idle', async () => {
    const out = await hostRun(PRELOAD_THROWS, 'min-threads-after-start-failure');
    expect(out).toEqual({
      scenario: 'min-threads-after-start-failure',
      steps: ['ok', 'ThreadExitError', 'ThreadExitError', 'ok'],
      atFirst: 2,
      atEnd: 2,
      stopped: 'stopped',
    });
  }, 40_000);

  it('a job with a timeout whose thread never finishes starting fails with TimeoutError and frees its slot; the thread is ended, quietly; stop() resolves', async () => {
    const out = await hostRun(PRELOAD_HANGS, 'hangs-timeout');
    expect(out).toEqual({
      scenario: 'hangs-timeout',
      first: { name: 'TimeoutError', isThreadStartError: false, message: 'qmux: job 1 timed out after 300 ms' },
      status: 'failed',
      idle: 'idle',
      numProcessing: 0,
      threadsLeft: 0,
      poolErrors: [],
      stopped: 'stopped',
    });
  }, 40_000);

  // With minThreads the pool makes its threads before any job; a job must not be handed to one of
  // them before it has started, or a timeout or cancel could not reach the job (SPEC 7: they abort
  // the task) and its slot would stay taken for good.
  for (const { how, scenario, first, status } of [
    {
      how: 'times out',
      scenario: 'hangs-timeout-min-threads',
      first: { name: 'TimeoutError', isThreadStartError: false, message: 'qmux: job 1 timed out after 300 ms' },
      status: 'failed',
    },
    {
      how: 'is cancelled',
      scenario: 'hangs-cancel-min-threads',
      first: { name: 'CancelledError', isThreadStartError: false, message: 'qmux: job cancelled' },
      status: 'cancelled',
    },
  ]) {
    it(`with minThreads, a job that ${how} while its thread is still starting settles once and frees its slot; the thread, kept for minThreads, stays; stop() resolves`, async () => {
      const out = await hostRun(PRELOAD_HANGS, scenario);
      expect(out).toEqual({
        scenario,
        first,
        status,
        settled: 1,
        idle: 'idle',
        numProcessing: 0,
        threadsLeft: 1,
        poolErrors: [],
        stopped: 'stopped',
      });
    }, 40_000);
  }

  it('with minThreads 2, a job cancelled while the threads are starting leaves both threads to the pool', async () => {
    const out = await hostRun(PRELOAD_THROWS, 'min-threads-cancel-while-starting');
    expect(out).toEqual({
      scenario: 'min-threads-cancel-while-starting',
      status: 'cancelled',
      idle: 'idle',
      threads: 2,
      poolErrors: [],
      stopped: 'stopped',
    });
  }, 40_000);

  it('resourceLimits too small to start a thread: each job fails with ThreadStartError and frees its slot; three make the worker degraded', async () => {
    const worker = track(new Worker<number, unknown>(ECHO, { concurrency: 1, resourceLimits: TOO_SMALL_TO_START }));
    const poolErrors: unknown[] = [];
    worker.on('error', (error) => poolErrors.push(error));
    const q = worker.bindQueue();
    for (const n of [1, 2, 3]) {
      const handle = q.add(n);
      expect(await settlesWithin(handle.settled(), 15_000), `job ${n} never settled`).toBe(true);
      const error = await rejection(handle.result());
      expect(error).toBeInstanceOf(ThreadStartError);
      expect(error.message).toMatch(/^qmux: the worker thread for this job could not start: .*ERR_WORKER_OUT_OF_MEMORY/);
      expect((error.cause as { code?: unknown }).code).toBe('ERR_WORKER_OUT_OF_MEMORY');
      expect(handle.status).toBe('failed');
      expect(await settlesWithin(worker.waitUntilIdle(), 15_000), `the slot of job ${n} was never freed`).toBe(true);
      expect(worker.numProcessing).toBe(0);
    }
    expect(worker.health().status).toBe('degraded');
    expect(poolErrors.length).toBeGreaterThan(0); // tinypool's pool error is still reported too
    expect(await settlesWithin(worker.stop(), 15_000)).toBe(true);
  });

  it('with minThreads (threads made before any job), a thread that cannot start fails the job with ThreadStartError too, every time', async () => {
    const worker = track(new Worker<number, unknown>(ECHO, { concurrency: 1, minThreads: 1, resourceLimits: TOO_SMALL_TO_START }));
    worker.on('error', () => undefined);
    const q = worker.bindQueue();
    for (const n of [1, 2]) {
      const handle = q.add(n);
      expect(await settlesWithin(handle.settled(), 15_000), `job ${n} never settled`).toBe(true);
      expect(await rejection(handle.result())).toBeInstanceOf(ThreadStartError);
      expect(await settlesWithin(worker.waitUntilIdle(), 15_000), `the slot of job ${n} was never freed`).toBe(true);
    }
    expect(worker.numProcessing).toBe(0);
  });

  it('with a short timeout, a job whose thread cannot start fails (timeout or start error, whichever comes first) and its slot frees', async () => {
    const worker = track(new Worker<number, unknown>(ECHO, { concurrency: 1, timeout: 300, resourceLimits: TOO_SMALL_TO_START }));
    worker.on('error', () => undefined);
    const q = worker.bindQueue();
    const handles = [q.add(1), q.add(2)];
    for (const handle of handles) {
      expect(await settlesWithin(handle.settled(), 15_000), 'a job never settled').toBe(true);
      // Which comes first depends on how fast a thread dies on this machine; both must free the slot.
      expect((await rejection(handle.result())).name).toMatch(/^(TimeoutError|ThreadStartError)$/);
      expect(handle.status).toBe('failed');
    }
    expect(await settlesWithin(worker.waitUntilIdle(), 15_000), 'a slot was never freed').toBe(true);
    expect(worker.numProcessing).toBe(0);
  });
});

describe('threads worker: stop() and process exit', () => {
  it('stop() releases the threads and start() makes new ones', async () => {
    const worker = track(new Worker<number, Echoed<number>>(ECHO, { concurrency: 1, idleTimeout: 60_000 }));
    const q = worker.bindQueue();
    const before = await q.add(1).result();
    await worker.stop();
    expect(worker.status).toBe('stopped');
    const queued = q.add(2);
    expect(await settlesWithin(queued.settled(), 300)).toBe(false); // stopped: nothing starts
    worker.start();
    const after = await queued.result();
    expect(after.data).toBe(2);
    expect(after.threadId).not.toBe(before.threadId);
  });

  /** Runs node with `args`; kills it if it has not ended by itself within EXIT_BOUND_MS. */
  const runNode = (args: string[]): Promise<ChildRun> => runBoundedNode(args, EXIT_BOUND_MS);

  function expectCleanExit(run: ChildRun): unknown {
    const context = `stdout: ${run.stdout}; stderr: ${run.stderr}; after ${run.ms} ms`;
    expect(run.killed, `still running after ${EXIT_BOUND_MS} ms; ${context}`).toBe(false);
    expect(run.signal, context).toBeNull();
    expect(run.code, context).toBe(0);
    expect(run.stderr, context).toBe('');
    const lines = run.stdout.split('\n').filter((line) => line.trim() !== '');
    expect(lines, context).toHaveLength(1);
    return JSON.parse(lines[0] as string) as unknown;
  }

  it('a script that stop()s its threads worker exits by itself with code 0', async () => {
    const out = expectCleanExit(await runNode([fileURLToPath(HOST), 'stop']));
    expect(out).toEqual({ scenario: 'stop', status: 'stopped', results: [1, 2, 3, 4] });
  }, 40_000);

  it('a script that leaves its threads worker idle (never stopped, long idleTimeout) exits by itself', async () => {
    const out = expectCleanExit(await runNode([fileURLToPath(HOST), 'idle']));
    expect(out).toEqual({ scenario: 'idle', status: 'idle', results: [1, 2, 3, 4] });
  }, 40_000);

  it('idle minThreads threads do not keep the process alive either', async () => {
    const out = expectCleanExit(await runNode([fileURLToPath(HOST), 'min-threads']));
    expect(out).toEqual({ scenario: 'min-threads', status: 'idle', results: [1, 2, 3, 4] });
  }, 40_000);

  it('a host started as node --input-type=module -e "<code>" still runs thread jobs (execArgv filtered)', async () => {
    const code = [
      `const { Worker } = await import(${JSON.stringify(BUILT.href)});`,
      `const worker = new Worker(new URL(${JSON.stringify(ECHO.href)}), { concurrency: 2 });`,
      `worker.on('error', (error) => { console.error('pool error', error); });`,
      `const q = worker.bindQueue();`,
      `const results = await Promise.all([1, 2, 3].map((n) => q.add(n).result()));`,
      `await worker.stop();`,
      `console.log(JSON.stringify({ execArgv: process.execArgv, results: results.map((r) => [r.data, r.isMainThread]) }));`,
    ].join('\n');
    const out = expectCleanExit(await runNode(['--input-type=module', '-e', code]));
    expect(out).toMatchObject({
      execArgv: expect.arrayContaining(['--input-type=module']) as unknown,
      results: [
        [1, false],
        [2, false],
        [3, false],
      ],
    });
  }, 40_000);
});

describe('a restart while a stop waits for remote sources', () => {
  it('stop() then start() while a remote source quiesces: a job started after the restart keeps its thread when the quiesce ends, and no "stopped" follows', async () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const worker = new Worker<{ ms: number; value: number }, { value: number }>(SLOW, { concurrency: 2 });
    const { adapter, releaseClose: closeDone } = adapterWithHeldClose();
    worker.bindRemote(adapter);
    try {
      const q = worker.bindQueue();
      await q.add({ ms: 0, value: 0 }).result();
      const events: string[] = [];
      worker.on('stopped', () => events.push(`stopped while ${worker.status}`));
      const stopping = worker.stop();
      await sleep(20);
      worker.start();
      const job = q.add({ ms: 1500, value: 1 });
      await sleep(400); // the job runs in a thread
      closeDone(); // the quiesce of the stop before the restart ends
      await stopping;
      const outcome = await job.result().then(
        (v) => v.value,
        (e: unknown) => `failed: ${(e as Error).message}`,
      );
      expect({ outcome, events }).toEqual({ outcome: 1, events: [] });
    } finally {
      await Promise.race([worker.stop(), sleep(5000)]);
    }
  });
});
