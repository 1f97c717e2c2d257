/**
 * stats() (SPEC 8): counters, per-source numbers, the age of the oldest due job and wait/run
 * time percentiles, on fake timers. Timings are read from `performance.now()` and due times
 * from `Date.now()`: both are faked, so every duration below is exact virtual time.
 */
import { describe, expect, it, vi } from 'vitest';
import { Registry, Strategy, Worker, type Job, type JobHandle, type Queue, type TimingStats } from '../src/index.js';
import type { JobRecord } from '../src/handles/job.js';
import { isSampled, isTimed, SAMPLE_EVERY, TIMED_IN_FULL_PER_SECOND } from '../src/core/sampling.js';
import { Gate, sleep, useVirtualTime } from './helpers.js';

const T0 = Date.UTC(2030, 0, 1);

useVirtualTime(T0);

/** Timings count in buckets at most 0.2 % wide: compare within 0.5 %. */
function expectNear(actual: number | null, expected: number | null): void {
  if (actual === null || expected === null) {
    expect(actual).toBe(expected);
    return;
  }
  expect(Math.abs(actual - expected), `${actual} should be about ${expected}`).toBeLessThanOrEqual(Math.max(0.01, expected * 0.005));
}

function expectTiming(timing: TimingStats, expected: Omit<TimingStats, 'count'> & { count: number }): void {
  expect(timing.count).toBe(expected.count);
  expectNear(timing.mean, expected.mean);
  expectNear(timing.p50, expected.p50);
  expectNear(timing.p90, expected.p90);
  expectNear(timing.p99, expected.p99);
  expectNear(timing.max, expected.max);
  expectNear(timing.sum, expected.sum);
}

/** How many of `handles` are timed: those timed in full, and the sampled ones (known from their add order). */
const sampledAmong = (handles: readonly object[]): number => handles.filter((h) => isTimed(h as JobRecord)).length;
/** How many jobs the timed ones among `handles` stand for (a thinned sample stands for SAMPLE_EVERY). */
const weightAmong = (handles: readonly object[]): number =>
  handles.reduce<number>((sum, h) => sum + (!isTimed(h as JobRecord) ? 0 : (h as JobRecord).timedInFull ? 1 : SAMPLE_EVERY), 0);

describe('counters', () => {
  it('added, started, succeeded, failed, retried, dead and cancelled are exact through a scenario', async () => {
    const worker = new Worker<string, string>(
      async (job: Job<string>) => {
        await sleep(10);
        if (job.data === 'always fails' || job.data === 'fails, no retry') throw new Error('always');
        if (job.data === 'fails once' && job.attempt === 1) throw new Error('once');
        return job.data;
      },
      { concurrency: 1, autoRun: false, retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } },
    );
    const q = worker.bindQueue({ name: 'q' });
    const zero = { added: 0, started: 0, succeeded: 0, failed: 0, retried: 0, dead: 0, cancelled: 0, deduplicated: 0 };
    expect(worker.stats().counters).toEqual(zero);

    q.add('ok 1');
    q.add('ok 2');
    const failing = q.add('always fails');
    const flaky = q.add('fails once');
    const doomed = q.add('cancelled while waiting');
    const noRetry = q.add('fails, no retry', { retry: { attempts: 1 } });
    expect(worker.stats().counters).toEqual({ ...zero, added: 6 });

    doomed.cancel();
    expect(worker.stats().counters).toEqual({ ...zero, added: 6, cancelled: 1 });

    worker.start();
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    // Attempts: ok 1, ok 2, always fails #1 (retried), fails once #1 (retried), fails, no retry
    // (failed for good), then after the backoff always fails #2 (failed for good) and fails once #2.
    expect([failing.status, flaky.status, noRetry.status, doomed.status]).toEqual(['failed', 'succeeded', 'failed', 'cancelled']);
    expect(worker.stats().counters).toEqual({
      added: 6,
      started: 7,
      succeeded: 3,
      failed: 2,
      retried: 2,
      dead: 2,
      cancelled: 1,
      deduplicated: 0,
    });
    expect(worker.deadLetters.map((entry) => entry.data)).toEqual(['fails, no retry', 'always fails']);
  });

  it('a job failing its only attempt counts failed and dead; with deadLetterLimit 0 it is failed but not dead', async () => {
    const handler = (): never => {
      throw new Error('nope');
    };
    const keeping = new Worker(handler);
    keeping.bindQueue().add('x');
    const dropping = new Worker(handler, { deadLetterLimit: 0 });
    dropping.bindQueue().add('x');
    await keeping.waitUntilIdle();
    await dropping.waitUntilIdle();
    expect(keeping.stats().counters).toMatchObject({ added: 1, started: 1, failed: 1, dead: 1, retried: 0, succeeded: 0 });
    expect(dropping.stats().counters).toMatchObject({ added: 1, started: 1, failed: 1, dead: 0, retried: 0, succeeded: 0 });
  });

  it('a job added with an already-aborted signal counts as added and cancelled: every added job has one outcome', async () => {
    const worker = new Worker(() => 'ok');
    const q = worker.bindQueue();
    const aborted = q.add('too late', { signal: AbortSignal.abort('gone') });
    q.add('fine');
    await worker.waitUntilIdle();
    expect(aborted.status).toBe('cancelled');
    const c = worker.stats().counters;
    expect(c).toMatchObject({ added: 2, started: 1, succeeded: 1, cancelled: 1 });
    expect(c.succeeded + c.failed + c.cancelled).toBe(c.added);
  });

  it('purge and cancelling a running job count as cancelled; a retry is not a new job', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { retry: { attempts: 3 } });
    const q = worker.bindQueue();
    const running = q.add('running');
    q.add('purged 1');
    q.add('purged 2');
    await vi.advanceTimersByTimeAsync(0);
    expect(q.purge()).toBe(2);
    running.cancel();
    expect(worker.stats().counters).toMatchObject({ added: 3, started: 1, cancelled: 3 });
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(worker.stats().counters).toMatchObject({ added: 3, started: 1, succeeded: 0, cancelled: 3 });

    const retried = q.add('retried');
    await vi.advanceTimersByTimeAsync(0);
    gate.open[0]?.fail(new Error('first'));
    await vi.advanceTimersByTimeAsync(0);
    gate.open[0]?.finish('second');
    await worker.waitUntilIdle();
    expect(retried.status).toBe('succeeded');
    expect(worker.stats().counters).toMatchObject({ added: 4, started: 3, succeeded: 1, retried: 1, failed: 0 });
  });
});

describe('per-source numbers', () => {
  it('waiting, due, delayed and running per source, and their totals', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 2, name: 'numbers' });
    const a = worker.bindQueue({ name: 'a', priority: 1 });
    const b = worker.bindPriorityQueue({ name: 'b', priority: 2 });
    worker.bindQueue({ name: 'empty' });
    a.add('a1');
    a.add('a2');
    a.add('a3');
    a.add('a4');
    a.add('a5 later', { delay: 1000 });
    b.add('b1', 1);
    b.add('b2 later', 1, { runAt: T0 + 5000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(gate.order).toEqual(['a1', 'a2']);

    const stats = worker.stats();
    expect(stats.name).toBe('numbers');
    expect(stats.status).toBe('running');
    expect(stats.concurrency).toBe(2);
    expect(stats.running).toBe(2);
    expect(stats.waiting).toBe(5);
    expect(stats.delayed).toBe(2);
    expect(stats.sampleEvery).toBe(64);
    expect(Object.keys(stats.sources)).toEqual(['a', 'b', 'empty']);
    expect(stats.sources.a).toMatchObject({ waiting: 3, due: 2, delayed: 1, running: 2 });
    expect(stats.sources.b).toMatchObject({ waiting: 2, due: 1, delayed: 1, running: 0 });
    expect(stats.sources.empty).toMatchObject({ waiting: 0, due: 0, delayed: 0, running: 0, oldestDueAgeMs: null });
    expect(a.length).toBe(3);

    gate.finishAll();
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.stats().sources.a).toMatchObject({ waiting: 1, due: 0, delayed: 1, running: 2 });
    expect(worker.stats().sources.b).toMatchObject({ waiting: 2, due: 1, delayed: 1, running: 0 });
  });

  it("counters and timings per source add up to the worker's, each counted where its job belongs", async () => {
    const worker = new Worker<number, void>(
      async (job: Job<number>) => {
        await sleep(Math.abs(job.data));
        if (job.data < 0 && job.attempt === 1) throw new Error('once');
      },
      { concurrency: Infinity, autoRun: false, retry: { attempts: 2, backoff: { type: 'fixed', delay: 10 } } },
    );
    const fast = worker.bindQueue({ name: 'fast' });
    const slow = worker.bindQueue({ name: 'slow' });
    const idle = worker.bindQueue({ name: 'idle' });
    // About one job in SAMPLE_EVERY is timed, by add order (isSampled of the generated id). They all wait 50 ms.
    const n = 4 * SAMPLE_EVERY;
    const fastJobs = Array.from({ length: n }, () => fast.add(10));
    const slowJobs = Array.from({ length: n }, () => slow.add(-100)); // each fails once, then runs again
    slow.add(5).cancel();
    fast.add(5, { signal: AbortSignal.abort() });
    await vi.advanceTimersByTimeAsync(50);
    worker.start();
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    const stats = worker.stats();
    const zero = { added: 0, started: 0, succeeded: 0, failed: 0, retried: 0, dead: 0, cancelled: 0, deduplicated: 0 };
    expect(stats.sources.fast?.counters).toEqual({ ...zero, added: n + 1, started: n, succeeded: n, cancelled: 1 });
    expect(stats.sources.slow?.counters).toEqual({ ...zero, added: n + 1, started: 2 * n, succeeded: n, retried: n, cancelled: 1 });
    expect(stats.sources.idle?.counters).toEqual(zero);
    for (const field of Object.keys(stats.counters) as (keyof typeof stats.counters)[]) {
      const sum = Object.values(stats.sources).reduce((total, s) => total + s.counters[field], 0);
      expect(sum, field).toBe(stats.counters[field]);
    }
    const none = { count: 0, mean: null, p50: null, p90: null, p99: null, max: null, sum: 0 };
    const fastTimed = sampledAmong(fastJobs);
    const slowTimed = sampledAmong(slowJobs);
    expect(fastTimed).toBeGreaterThan(0);
    expect(slowTimed).toBeGreaterThan(0);
    const timing = (count: number, ms: number) => ({ count, mean: ms, p50: ms, p90: ms, p99: ms, max: ms, sum: ms * count });
    expectTiming(stats.sources.fast?.waitTime as TimingStats, timing(fastTimed, 50));
    expectTiming(stats.sources.slow?.waitTime as TimingStats, timing(slowTimed, 50));
    expectTiming(stats.sources.fast?.runTime as TimingStats, timing(fastTimed, 10));
    // Slow's timed jobs ran twice: their failed attempt and their retry.
    expectTiming(stats.sources.slow?.runTime as TimingStats, timing(2 * slowTimed, 100));
    expect(stats.sources.idle?.waitTime).toEqual(none);
    expect(stats.sources.idle?.runTime).toEqual(none);
    expect(stats.runTime.count).toBe(fastTimed + 2 * slowTimed);
    expectNear(stats.runTime.sum, 10 * fastTimed + 200 * slowTimed);
    expectNear(stats.runTime.max, 100);
    expectTiming(stats.waitTime, timing(fastTimed + slowTimed, 50));
    expect(idle.length).toBe(0);
  });

  it('a delayed job whose due time has passed counts as due, not delayed, while every slot is busy (SPEC 3 words)', async () => {
    // SPEC 3: "A waiting job is *due* once its due time has passed, and *delayed* before." A
    // worker whose slots are all taken does not look at its delayed jobs until a slot frees, but
    // stats() must still tell an overdue job from a delayed one: that is the stuck-queue signal.
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 1 });
    const q = worker.bindQueue({ name: 'q' });
    q.add('holds the only slot');
    const overdue = q.add('due at +100', { delay: 100 });
    await vi.advanceTimersByTimeAsync(400);
    expect(gate.order).toEqual(['holds the only slot']);
    expect(overdue.status).toBe('waiting');
    const stats = worker.stats();
    expect(stats.sources.q).toMatchObject({ waiting: 1, due: 1, delayed: 0, running: 1 });
    expect(stats.delayed).toBe(0);
    expect(stats.sources.q?.oldestDueAgeMs).toBe(300);
    gate.finishAll();
    await vi.advanceTimersByTimeAsync(0);
    gate.finishAll();
    await worker.waitUntilIdle();
  });
});

describe('a redrive parked behind its predecessor', () => {
  it('is waiting and due (in stats and in the metrics), not neither', async () => {
    let release = (): void => undefined;
    let calls = 0;
    const worker = new Worker<string>(
      () =>
        ++calls > 1
          ? undefined
          : new Promise<void>((_, reject) => {
              release = () => reject(new Error('late'));
            }),
      { name: 'w', timeout: 100 },
    );
    const q = worker.bindQueue({ name: 'q' });
    const first = q.add('ignores its signal');
    await vi.advanceTimersByTimeAsync(150);
    expect(first.status).toBe('failed'); // timed out for good; its handler still runs
    worker.redrive(worker.deadLetters[0] as NonNullable<(typeof worker.deadLetters)[0]>);
    await vi.advanceTimersByTimeAsync(1000);
    const stats = worker.stats().sources.q;
    expect(stats).toMatchObject({ waiting: 1, due: 1, delayed: 0, running: 1 }); // the predecessor's handler holds its slot
    expect(stats?.oldestDueAgeMs).toBe(1000); // due since its redrive
    const metrics = new Registry().add(worker).metrics();
    expect(metrics).toContain('qmux_jobs_waiting{worker="w",source="q",state="due"} 1\n');
    expect(metrics).toContain('qmux_jobs_waiting{worker="w",source="q",state="delayed"} 0\n');
    release();
    await worker.waitUntilIdle();
    expect(worker.stats().sources.q).toMatchObject({ waiting: 0, due: 0, delayed: 0 });
  });
});

describe('sources named like Object.prototype members', () => {
  it('a source named "__proto__" is listed in stats().sources like any other, for Object.keys and JSON', async () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    worker.bindQueue({ name: 'first' }).add('a');
    worker.bindQueue({ name: '__proto__' }).add('b');
    worker.bindQueue({ name: 'constructor' });
    const { sources } = worker.stats();
    expect(Object.keys(sources)).toEqual(['first', '__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(sources, '__proto__')?.value).toMatchObject({ waiting: 1, due: 1 });
    // Still a plain object with Object.prototype: nothing else about it changes.
    expect(Object.getPrototypeOf(sources)).toBe(Object.prototype);
    expect(Object.keys(JSON.parse(JSON.stringify(sources)) as object)).toEqual(['first', '__proto__', 'constructor']);
  });
});

describe('oldestDueAgeMs', () => {
  it('of a FIFO queue that flows but never empties is the age of its oldest due job, not the time since it was last empty', async () => {
    // One slot, each job runs 100 ms, one job added every 100 ms: four or five always wait, none for long.
    const addedAt = new Map<number, number>();
    const started = new Set<number>();
    const worker = new Worker<number>(
      (job) => {
        started.add(job.data);
        return sleep(100);
      },
      { concurrency: 1 },
    );
    const q = worker.bindQueue({ name: 'q' });
    let n = 0;
    const add = (): void => {
      addedAt.set(n, performance.now());
      q.add(n++);
    };
    for (let i = 0; i < 4; i++) add();
    let worst = 0;
    for (let t = 0; t < 300; t++) {
      add();
      await vi.advanceTimersByTimeAsync(100);
      let oldest = Infinity;
      for (const [data, at] of addedAt) if (!started.has(data)) oldest = Math.min(oldest, at);
      const exact = performance.now() - oldest;
      worst = Math.max(worst, Math.abs((worker.stats().sources.q?.oldestDueAgeMs as number) - exact));
    }
    expect(q.length).toBeLessThanOrEqual(5);
    expect(worst).toBe(0);
  });

  it('of a FIFO queue is exact for jobs added in turns of their own, whatever the sampling', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { autoRun: false, concurrency: 1 });
    const q = worker.bindQueue({ name: 'q' });
    for (let i = 0; i < 5; i++) {
      q.add(i);
      await vi.advanceTimersByTimeAsync(1000); // each add in a turn of its own, a second apart
    }
    expect(worker.stats().sources.q?.oldestDueAgeMs).toBe(5000);
    worker.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(gate.started).toHaveLength(1);
    expect(worker.stats().sources.q?.oldestDueAgeMs).toBe(4000); // the second job, added at 1 s
    gate.finishOldest();
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.stats().sources.q?.oldestDueAgeMs).toBe(3000);
  });

  it('is null for an empty source and grows with time for a source stuck behind its rate limit', async () => {
    const worker = new Worker(() => undefined, { concurrency: 4 });
    const limited = worker.bindQueue({ name: 'limited', rateLimit: { limit: 1, interval: 10_000 } });
    const idle = worker.bindQueue({ name: 'idle' });
    for (let i = 0; i < 12; i++) limited.add(`job ${i}`);
    await vi.advanceTimersByTimeAsync(0);
    // One start per 10 s: the first ran, eleven wait, all of them due.
    expect(worker.stats().counters.started).toBe(1);
    expect(worker.stats().sources.limited).toMatchObject({ waiting: 11, due: 11, delayed: 0, running: 0 });
    expect(worker.stats().sources.idle?.oldestDueAgeMs).toBeNull();

    expect(worker.stats().sources.limited?.oldestDueAgeMs).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(worker.stats().sources.limited?.oldestDueAgeMs).toBe(1000);
    await vi.advanceTimersByTimeAsync(2500);
    expect(worker.stats().sources.limited?.oldestDueAgeMs).toBe(3500);
    expect(worker.stats().oldestDueAgeMs).toBe(3500);
    expect(worker.stats().sources.idle?.oldestDueAgeMs).toBeNull();

    // At +10 s the second job starts: the oldest due job is now the third, still added at +0.
    await vi.advanceTimersByTimeAsync(6500);
    expect(worker.stats().counters.started).toBe(2);
    expect(worker.stats().sources.limited?.oldestDueAgeMs).toBe(10_000);

    limited.purge();
    expect(worker.stats().sources.limited?.oldestDueAgeMs).toBeNull();
    expect(worker.stats().oldestDueAgeMs).toBeNull();
    idle.add('quick');
    await worker.waitUntilIdle();
  });

  it('counts delayed jobs whose time has come as due, whatever part of them has moved to the due order', async () => {
    // One runAt for 5000 jobs: when it comes, a FIFO queue moves its due jobs as they start (a few
    // at a time), and stats() counts the rest as due where they wait.
    const ran: number[] = [];
    const held: (() => void)[] = [];
    let hold = true;
    const worker = new Worker<number>(
      (job) => {
        ran.push(job.data);
        return hold ? new Promise<void>((resolve) => held.push(resolve)) : undefined;
      },
      { concurrency: 2 },
    );
    const q = worker.bindQueue({ name: 'q' });
    const n = 5000;
    const handles = Array.from({ length: n }, (_, i) => q.add(i, { runAt: T0 + 1000 }));
    expect(worker.stats().sources.q).toMatchObject({ waiting: n, due: 0, delayed: n });
    await vi.advanceTimersByTimeAsync(1000);
    expect(ran).toEqual([0, 1]);
    const stats = worker.stats();
    expect(stats.sources.q).toMatchObject({ waiting: n - 2, due: n - 2, delayed: 0, running: 2 });
    expect(stats).toMatchObject({ waiting: n - 2, delayed: 0 });
    expect(stats.sources.q?.oldestDueAgeMs).toBe(0);
    // A cancelled one among them (the count then walks them) is not counted.
    handles[100]?.cancel();
    expect(worker.stats().sources.q).toMatchObject({ waiting: n - 3, due: n - 3, delayed: 0 });
    await vi.advanceTimersByTimeAsync(500);
    expect(worker.stats().sources.q?.oldestDueAgeMs).toBe(500);
    hold = false;
    for (const resolve of held) resolve();
    await worker.waitUntilIdle();
    // Every one, in add order, but the cancelled one.
    expect(ran).toEqual(Array.from({ length: n }, (_, i) => i).filter((i) => i !== 100));
    expect(worker.stats().sources.q).toMatchObject({ waiting: 0, due: 0, delayed: 0 });
  });

  it('counts from the due time of a delayed job, not from its add', async () => {
    const worker = new Worker(() => undefined);
    const q = worker.bindQueue({ name: 'q', rateLimit: { limit: 1, interval: 10_000 } });
    q.add('takes the only start of the window');
    q.add('due at +2000', { delay: 2000 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(worker.stats().sources.q).toMatchObject({ due: 0, delayed: 1, oldestDueAgeMs: null });
    await vi.advanceTimersByTimeAsync(4000);
    // Due since +2000, held back by the rate limit until +10 000.
    expect(worker.stats().sources.q).toMatchObject({ due: 1, delayed: 0, oldestDueAgeMs: 3000 });
    await vi.advanceTimersByTimeAsync(5000);
    expect(worker.stats().counters.started).toBe(2);
    expect(worker.stats().sources.q?.oldestDueAgeMs).toBeNull();
    await worker.waitUntilIdle();
  });

  it('of a priority queue shows a due job waiting behind a delayed first job and a younger, better one (sampled or not)', async () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const other = new Worker(() => undefined, { autoRun: false }).bindQueue();
    const sampled = worker.bindPriorityQueue({ name: 'sampled' });
    const unsampled = worker.bindPriorityQueue({ name: 'unsampled' });
    /** A handle's job sequence number (the record behind it; not public). */
    const seqOf = (handle: object): number => (handle as { seq: number }).seq;
    /** Adds to `pq` with the next job seq sampled (`true`) or not: seqs are shared by every source. */
    const addAs = (want: boolean, pq: typeof sampled, data: string, priority: number, delay?: number): void => {
      for (let i = 0; i < 2 * SAMPLE_EVERY && isSampled(seqOf(other.add('filler')) + 1) !== want; i++);
      const job = pq.add(data, priority, delay === undefined ? undefined : { delay });
      expect(isSampled(seqOf(job)), data).toBe(want);
    };
    // The first job in is delayed an hour (and sampled: the oldest sampled entry is not due).
    addAs(true, sampled, 'A', 0, 3_600_000);
    addAs(true, sampled, 'X', 9); // due now, last by priority
    addAs(false, unsampled, 'A', 0, 3_600_000);
    addAs(false, unsampled, 'X', 9); // due now, and no due job is sampled: the upper bound applies
    await vi.advanceTimersByTimeAsync(500);
    sampled.add('Y', 0); // due now, first by priority
    unsampled.add('Y', 0);
    const stats = worker.stats();
    expect(stats.sources.sampled?.oldestDueAgeMs).toBe(500); // X, found among the sampled ones
    expect(stats.sources.unsampled?.oldestDueAgeMs).toBe(500); // since the source last left empty
    expect(stats.oldestDueAgeMs).toBe(500);
  });
});

describe('wait and run time percentiles', () => {
  /**
   * Adds `n` jobs while the worker is paused, keeps them waiting `waitMs`, then lets them all
   * start at once; each runs `runMs`. Every job waits and runs exactly as long, so the result
   * does not depend on which ones were sampled. Returns how many were timed, and how many jobs
   * they stand for.
   */
  async function batch(
    worker: Worker<number, void>,
    queue: Queue<number, void>,
    n: number,
    waitMs: number,
    runMs: number,
  ): Promise<{ timed: number; weight: number }> {
    worker.pause();
    const handles = [];
    for (let i = 0; i < n; i++) handles.push(queue.add(runMs));
    await vi.advanceTimersByTimeAsync(waitMs);
    worker.resume();
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.numProcessing).toBe(n);
    await vi.advanceTimersByTimeAsync(runMs);
    await worker.waitUntilIdle();
    return { timed: sampledAmong(handles), weight: weightAmong(handles) };
  }

  it('reflect known virtual durations, over every job up to the budget of a second, then about one in sampleEvery', async () => {
    const worker = new Worker<number, void>((job) => sleep(job.data), { concurrency: Infinity });
    const q = worker.bindQueue();
    expectTiming(worker.stats().waitTime, { count: 0, mean: null, p50: null, p90: null, p99: null, max: null, sum: 0 });

    const { timed: first, weight: firstWeight } = await batch(worker, q, 1280, 250, 40);
    expect(firstWeight).toBeGreaterThan(1280 * 0.8);
    expect(firstWeight).toBeLessThan(1280 * 1.2);
    const every = worker.stats().sampleEvery;
    // The first TIMED_IN_FULL_PER_SECOND in full, then about one in sampleEvery.
    expect(first).toBeGreaterThanOrEqual(TIMED_IN_FULL_PER_SECOND + (1280 - TIMED_IN_FULL_PER_SECOND) / every - 2);
    expect(first).toBeLessThanOrEqual(TIMED_IN_FULL_PER_SECOND + (1280 - TIMED_IN_FULL_PER_SECOND) / every + 2);
    expectTiming(worker.stats().waitTime, { count: first, mean: 250, p50: 250, p90: 250, p99: 250, max: 250, sum: 250 * first });
    expectTiming(worker.stats().runTime, { count: first, mean: 40, p50: 40, p90: 40, p99: 40, max: 40, sum: 40 * first });

    // Half as many again, waiting 1000 ms and running 400 ms: the median stays with the first
    // batch, the 90th percentile moves to the second.
    // The budget of the second is spent: these stand for about sampleEvery jobs each.
    const { timed: second, weight: secondWeight } = await batch(worker, q, 640, 1000, 400);
    const count = first + second;
    const weight = firstWeight + secondWeight;
    expect(secondWeight / weight).toBeGreaterThan(0.1);
    expectTiming(worker.stats().waitTime, {
      count,
      mean: (firstWeight * 250 + secondWeight * 1000) / weight,
      p50: 250,
      p90: 1000,
      p99: 1000,
      max: 1000,
      sum: first * 250 + second * 1000,
    });
    expectTiming(worker.stats().runTime, {
      count,
      mean: (firstWeight * 40 + secondWeight * 400) / weight,
      p50: 40,
      p90: 400,
      p99: 400,
      max: 400,
      sum: first * 40 + second * 400,
    });
    // Its one source's timings say the same.
    const stats = worker.stats();
    const source = Object.values(stats.sources)[0];
    expectTiming(source?.waitTime as TimingStats, stats.waitTime);
    expectTiming(source?.runTime as TimingStats, stats.runTime);
  });

  it("a source's percentiles over spread-out run times agree with the worker's", async () => {
    const worker = new Worker<number, void>((job) => sleep(job.data), { concurrency: Infinity, autoRun: false });
    const q = worker.bindQueue({ name: 'spread' });
    const handles = [];
    for (let i = 1; i <= 2000; i++) handles.push(q.add((i * 7919) % 997)); // 0..996 ms, shuffled
    worker.start();
    await vi.advanceTimersByTimeAsync(1000);
    await worker.waitUntilIdle();
    const stats = worker.stats();
    expect(stats.runTime.count).toBe(sampledAmong(handles));
    expectTiming(stats.sources.spread?.runTime as TimingStats, stats.runTime);
    expect(stats.runTime.p90).toBeGreaterThan(stats.runTime.p50 as number);
  });

  it('the wait of a delayed job counts from its due time, and a retry adds no wait sample', async () => {
    const worker = new Worker<number, void>(
      (job) => {
        if (job.attempt === 1 && job.data < 0) throw new Error('retry me');
        return sleep(Math.abs(job.data));
      },
      { concurrency: Infinity, retry: { attempts: 2, backoff: { type: 'fixed', delay: 5000 } } },
    );
    const q = worker.bindQueue();
    const handles = [];
    for (let i = 0; i < 256; i++) handles.push(q.add(-20, { delay: 700 }));
    await vi.advanceTimersByTimeAsync(700);
    await vi.advanceTimersByTimeAsync(5000);
    await vi.advanceTimersByTimeAsync(20);
    await worker.waitUntilIdle();
    const stats = worker.stats();
    expect(stats.counters).toMatchObject({ added: 256, started: 512, retried: 256, succeeded: 256 });
    const sampled = sampledAmong(handles);
    expect(sampled).toBeGreaterThan(0);
    // Started the moment they came due: no wait. Only first attempts are timed.
    expect(stats.waitTime.count).toBe(sampled);
    expect(stats.waitTime.max).toBeLessThan(1);
    // Run times: a failed first attempt (0 ms) and a 20 ms second one per sampled job.
    expect(stats.runTime.count).toBe(2 * sampled);
    expectNear(stats.runTime.max, 20);
  });

  it('sampled jobs that start out of add order (a priority queue, newest first) are each timed once, with their own wait', async () => {
    const worker = new Worker<number, void>(() => undefined, { concurrency: 1, autoRun: false });
    const pq = worker.bindPriorityQueue();
    const handles = [];
    // Job i is added at +i ms with priority -i: the newest runs first.
    for (let i = 0; i < 1024; i++) {
      handles.push(pq.add(i, -i));
      await vi.advanceTimersByTimeAsync(1);
    }
    worker.start();
    await worker.waitUntilIdle();
    const sampled = sampledAmong(handles);
    const { waitTime } = worker.stats();
    expect(waitTime.count).toBe(sampled);
    // All start at +1024 ms: the oldest sampled job waited about 1024 ms, the newest about 1 ms.
    expect(waitTime.max).toBeGreaterThan(900);
    expect(waitTime.p50).toBeGreaterThan(300);
    expect(waitTime.p50).toBeLessThan(700);
  });

  it('a sampled job cancelled while it waits or runs is not timed', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: Infinity, autoRun: false });
    const q = worker.bindQueue({ name: 'q' });
    const handles = [];
    for (let i = 0; i < 512; i++) handles.push(q.add(`job ${i}`));
    const sampled = handles.filter((h) => isTimed(h as unknown as JobRecord));
    expect(sampled.length).toBeGreaterThanOrEqual(2);
    // One sampled job cancelled while it waits, one while it runs: neither is timed.
    (sampled[0] as JobHandle<unknown>).cancel();
    worker.start();
    await vi.advanceTimersByTimeAsync(10);
    (sampled[1] as JobHandle<unknown>).cancel();
    expect(worker.stats().waitTime.count).toBe(sampled.length - 1);
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(worker.stats().runTime.count).toBe(sampled.length - 2);
  });
});

describe('Registry.stats()', () => {
  it('has every registered worker, by name, each as its own stats()', async () => {
    const registry = new Registry();
    const mailer = new Worker(() => undefined, { name: 'mailer' });
    const thumbs = new Worker(() => undefined, { name: 'thumbs', autoRun: false });
    registry.add(mailer).add(thumbs);
    mailer.bindQueue({ name: 'emails' }).add('hi');
    thumbs.bindQueue({ name: 'images' }).add('cat.png');
    await mailer.waitUntilIdle();
    const stats = registry.stats();
    expect(Object.keys(stats.workers)).toEqual(['mailer', 'thumbs']);
    expect(stats.workers.mailer).toEqual(mailer.stats());
    expect(stats.workers.mailer?.counters).toMatchObject({ added: 1, started: 1, succeeded: 1 });
    expect(stats.workers.thumbs?.status).toBe('initiated');
    expect(stats.workers.thumbs?.sources.images).toMatchObject({ waiting: 1, due: 1 });
    expect(new Registry().stats()).toEqual({ workers: {} });
  });

  it('lists a worker named "__proto__" like any other', () => {
    const registry = new Registry();
    registry.add(new Worker(() => undefined, { name: '__proto__', autoRun: false }));
    registry.add(new Worker(() => undefined, { name: 'b', autoRun: false }));
    const { workers } = registry.stats();
    expect(Object.keys(workers)).toEqual(['__proto__', 'b']);
    expect(Object.getOwnPropertyDescriptor(workers, '__proto__')?.value).toMatchObject({ name: '__proto__', status: 'initiated' });
    expect(Object.getPrototypeOf(workers)).toBe(Object.prototype);
  });
});

describe('sampled percentiles stay honest', () => {
  /** The exact `p`-th percentile of `values` (nearest rank). */
  function exactPercentile(values: readonly number[], p: number): number {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
  }

  function expectWithin10Percent(sampled: number, exact: number, what: string): void {
    expect(Math.abs(sampled - exact) / exact, `${what}: sampled ${sampled} ms, exact ${exact} ms`).toBeLessThanOrEqual(0.1);
  }

  it('p50 and p99 of wait and run time within 10% of exact over 48,000 jobs, added in a pattern of period 4 over two queues', async () => {
    // Known run times from a seeded generator: queue `a` 100-200 ms; queue `b` 1-2 s, and one job
    // in ten 10-20 s. Jobs are added a, b, b, b, a, b, b, b...: a sampler that picked jobs by add
    // order modulo a power of two would time only one of the queues and miss both percentiles.
    let state = 12345;
    const random = (): number => {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const between = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
    const waits: number[] = [];
    const runs: number[] = [];
    const start = performance.now();
    const worker = new Worker<number, void>(
      (job) => {
        waits.push(performance.now() - start);
        runs.push(job.data);
        return sleep(job.data);
      },
      { concurrency: 16, strategy: Strategy.RoundRobin },
    );
    const a = worker.bindQueue({ name: 'a' });
    const b = worker.bindQueue({ name: 'b' });
    const n = 48_000;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const ms = i % 4 === 0 ? between(100, 200) : random() < 0.1 ? between(10_000, 20_000) : between(1000, 2000);
      total += ms;
      (i % 4 === 0 ? a : b).add(ms);
    }
    await vi.advanceTimersByTimeAsync(total);
    await worker.waitUntilIdle();
    expect(runs).toHaveLength(n);

    const { waitTime, runTime, sampleEvery } = worker.stats();
    // Added at once: the second's budget in full, then about one job in sampleEvery.
    for (const timing of [waitTime, runTime]) {
      expect(timing.count).toBeGreaterThan(TIMED_IN_FULL_PER_SECOND + (0.8 * n) / sampleEvery);
      expect(timing.count).toBeLessThan(TIMED_IN_FULL_PER_SECOND + (1.2 * n) / sampleEvery);
    }
    expectWithin10Percent(runTime.p50 as number, exactPercentile(runs, 50), 'run time p50');
    expectWithin10Percent(runTime.p99 as number, exactPercentile(runs, 99), 'run time p99');
    expectWithin10Percent(waitTime.p50 as number, exactPercentile(waits, 50), 'wait time p50');
    expectWithin10Percent(waitTime.p99 as number, exactPercentile(waits, 99), 'wait time p99');
  });
});

describe('which jobs are sampled', () => {
  it('about one in sampleEvery, never more than 89 apart in add order, and in proportion to any period of adds', () => {
    let count = 0;
    let last = 0;
    let widest = 0;
    const byResidue = [0, 0, 0, 0, 0, 0, 0, 0];
    for (let seq = 1; seq <= 1_000_000; seq++) {
      if (!isSampled(seq)) continue;
      count++;
      if (last > 0) widest = Math.max(widest, seq - last);
      last = seq;
      byResidue[seq % 8] = (byResidue[seq % 8] as number) + 1;
    }
    expect(Math.abs(count - 1_000_000 / SAMPLE_EVERY)).toBeLessThan(10);
    expect(widest).toBeLessThanOrEqual(89);
    expect(isSampled(1)).toBe(true);
    // Jobs added in a pattern of period 8 (or 2, or 4) are sampled at each place of the pattern alike.
    for (const n of byResidue) expect(Math.abs(n - count / 8)).toBeLessThan(count / 80);
  });
});

describe('percentiles at any volume (SPEC 11, issue 33 defect 8)', () => {
  /** The exact `p`-th percentile of `values` (nearest rank). */
  function exact(values: readonly number[], p: number): number {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
  }

  it('with nothing timed, has no percentile, mean or max (null), not 0 ms', () => {
    const worker = new Worker<number, void>(() => undefined, { autoRun: false });
    worker.bindQueue({ name: 'q' });
    const { waitTime, runTime, sources } = worker.stats();
    for (const timing of [waitTime, runTime, sources.q?.waitTime, sources.q?.runTime]) {
      expect(timing).toEqual({ count: 0, mean: null, p50: null, p90: null, p99: null, max: null, sum: 0 });
    }
  });

  it('a worker that has run 10 jobs reports the percentiles of those 10', async () => {
    const worker = new Worker<number, void>((job) => sleep(job.data), { concurrency: 1 });
    const q = worker.bindQueue();
    const runs = [5, 10, 15, 20, 25, 30, 35, 40, 45, 500];
    for (const ms of runs) q.add(ms);
    await vi.advanceTimersByTimeAsync(2000);
    await worker.waitUntilIdle();
    const { runTime, waitTime } = worker.stats();
    expect(runTime.count).toBe(10);
    expect(waitTime.count).toBe(10);
    expectNear(runTime.p50 as number, 25);
    expectNear(runTime.p90 as number, 45);
    expectNear(runTime.p99 as number, 500);
    expectNear(runTime.max as number, 500);
    // Job i waited for the runs before it.
    const waits = runs.map((_, i) => runs.slice(0, i).reduce((a, b) => a + b, 0));
    expectNear(waitTime.p50 as number, exact(waits, 50));
    expectNear(waitTime.p99 as number, exact(waits, 99));
  });

  it('100 jobs added at once report their real p99 wait, not one sampled job’s', async () => {
    // Known run times from a seeded generator, one slot: job i waits for the runs of those before it.
    let state = 7;
    const random = (): number => {
      state = (Math.imul(state, 48271) >>> 0) % 2147483647;
      return state / 2147483647;
    };
    const worker = new Worker<number, void>((job) => sleep(job.data), { concurrency: 10 });
    const q = worker.bindQueue();
    const start = performance.now();
    const waits: number[] = [];
    worker.on('active', () => void waits.push(performance.now() - start));
    for (let i = 0; i < 100; i++) q.add(1 + Math.floor(random() * 100));
    await vi.advanceTimersByTimeAsync(10_000);
    await worker.waitUntilIdle();
    const { waitTime } = worker.stats();
    expect(waitTime.count).toBe(100);
    expectNear(waitTime.p50 as number, exact(waits, 50));
    expectNear(waitTime.p99 as number, exact(waits, 99));
    expectNear(waitTime.max as number, exact(waits, 100));
  });

  it('a busy worker times every job up to the budget of a second, then one in sampleEvery, weighted: percentiles stay right', async () => {
    // 20,000 jobs added at once: the first ones (timed in full) are the quick ones, the rest
    // (thinned) slow. Unweighted, the full ones would drag every percentile down.
    const worker = new Worker<number, void>((job) => sleep(job.data), { concurrency: 64, autoRun: false });
    const q = worker.bindQueue();
    const runs: number[] = [];
    let total = 0;
    for (let i = 0; i < 20_000; i++) {
      const ms = i < 1000 ? 10 : 100 + (i % 100);
      runs.push(ms);
      total += ms;
      q.add(ms);
    }
    worker.start();
    await vi.advanceTimersByTimeAsync(total / 64 + 1000);
    await worker.waitUntilIdle();
    const { runTime, sampleEvery } = worker.stats();
    expect(runTime.count).toBeLessThan(1000 + 20_000 / sampleEvery);
    expect(runTime.count).toBeGreaterThan(20_000 / sampleEvery);
    for (const p of [50, 90, 99] as const) {
      const got = runTime[`p${p}`] as number;
      expect(Math.abs(got - exact(runs, p)) / exact(runs, p), `p${p}: ${got} vs ${exact(runs, p)}`).toBeLessThanOrEqual(0.05);
    }
    // The mean is weighted alike: about that of every job, not of the sampled ones.
    const mean = runs.reduce((a, b) => a + b, 0) / runs.length;
    expect(Math.abs((runTime.mean as number) - mean) / mean).toBeLessThan(0.05);
  });

  it('times every job again once the busy second has passed', async () => {
    const worker = new Worker<number, void>(() => undefined, { concurrency: Infinity });
    const q = worker.bindQueue();
    for (let i = 0; i < 5000; i++) q.add(0);
    await worker.waitUntilIdle();
    const busy = worker.stats().runTime.count;
    expect(busy).toBeLessThan(5000);
    await vi.advanceTimersByTimeAsync(1000);
    for (let i = 0; i < 10; i++) {
      q.add(0);
      await worker.waitUntilIdle();
    }
    expect(worker.stats().runTime.count).toBe(busy + 10);
  });
});
