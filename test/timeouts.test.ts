import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TimeoutError, Worker, type Job, type WorkerOptions } from '../src/index.js';
import { flushMicrotasks } from './helpers.js';

/**
 * Timeouts (SPEC 6): the worker's `timeout` and the per-job override, the signal aborting with a
 * `TimeoutError`, and a handler that ignores its signal keeping its slot. Fake timers throughout.
 */

/** What a test job does. */
interface Script {
  name: string;
  /** Virtual ms each attempt takes before it settles (per attempt; the last value repeats). */
  ms: number[];
  /** Settle by rejecting instead of resolving. */
  reject?: boolean;
  /** Reject with the signal's reason as soon as it aborts. */
  honourSignal?: boolean;
}

interface Record {
  name: string;
  attempt: number;
  start: number;
  end?: number;
  /** Whether the signal was already aborted when the handler started. */
  abortedAtStart: boolean;
  signal: AbortSignal;
}

let t0 = 0;
let records: Record[] = [];
let inFlight = 0;
let maxInFlight = 0;
/** Jobs with an attempt in flight, by id, to catch two attempts of one job at once. */
let openJobs = new Set<string>();
let doubleAttempts = 0;

function elapsed(): number {
  return Date.now() - t0;
}

function handler(job: Job<Script>): Promise<string> {
  const script = job.data;
  const record: Record = { name: script.name, attempt: job.attempt, start: elapsed(), abortedAtStart: job.signal.aborted, signal: job.signal };
  records.push(record);
  inFlight++;
  maxInFlight = Math.max(maxInFlight, inFlight);
  if (openJobs.has(job.id)) doubleAttempts++;
  openJobs.add(job.id);
  const ms = script.ms[Math.min(job.attempt, script.ms.length) - 1] as number;
  return new Promise<string>((resolve, reject) => {
    const done = (): void => {
      inFlight--;
      openJobs.delete(job.id);
      record.end = elapsed();
    };
    const timer = setTimeout(() => {
      done();
      if (script.reject === true) reject(new Error(`${script.name} failed on its own`));
      else resolve(`${script.name}:${job.attempt}`);
    }, ms);
    if (script.honourSignal === true) {
      job.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        done();
        reject(job.signal.reason);
      });
    }
  });
}

function makeWorker(options?: WorkerOptions): Worker<Script, string> {
  return new Worker<Script, string>(handler, options);
}

function recordsOf(name: string): Record[] {
  return records.filter((r) => r.name === name);
}

beforeEach(() => {
  vi.useFakeTimers();
  t0 = Date.now();
  records = [];
  inFlight = 0;
  maxInFlight = 0;
  openJobs = new Set();
  doubleAttempts = 0;
});

afterEach(() => {
  vi.useRealTimers();
});

describe('timeout', () => {
  it("fails an attempt that runs past the worker's timeout with a TimeoutError", async () => {
    const worker = makeWorker({ timeout: 100 });
    const handle = worker.bindQueue().add({ name: 'a', ms: [1000] });
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(99);
    expect(handle.status).toBe('running');
    await vi.advanceTimersByTimeAsync(1);
    expect(handle.status).toBe('failed');
    const error = await outcome;
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeout).toBe(100);
    expect((error as TimeoutError).message).toContain('100');
  });

  it("aborts the job's signal with that TimeoutError", async () => {
    const worker = makeWorker({ timeout: 100 });
    const handle = worker.bindQueue().add({ name: 'a', ms: [1000] });
    const outcome = handle.result().catch((error: unknown) => error);
    await flushMicrotasks();
    const signal = recordsOf('a')[0]?.signal as AbortSignal;
    expect(signal.aborted).toBe(false);
    const aborted = vi.fn();
    signal.addEventListener('abort', aborted);
    await vi.advanceTimersByTimeAsync(100);
    expect(aborted).toHaveBeenCalledTimes(1);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(TimeoutError);
    expect(await outcome).toBe(signal.reason);
  });

  it('a job that finishes in time is not affected, and leaves no timer behind', async () => {
    const worker = makeWorker({ timeout: 100 });
    const handle = worker.bindQueue().add({ name: 'a', ms: [99] });
    await vi.advanceTimersByTimeAsync(99);
    expect(handle.status).toBe('succeeded');
    expect(recordsOf('a')[0]?.signal.aborted).toBe(false);
    await worker.waitUntilIdle();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(handle.status).toBe('succeeded');
  });

  it('a synchronous handler leaves no timeout timer behind', async () => {
    const worker = new Worker<number, number>((job) => job.data * 2, { timeout: 100 });
    const handle = worker.bindQueue().add(21);
    await expect(handle.result()).resolves.toBe(42);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("the per-job timeout overrides the worker's, longer or shorter", async () => {
    const worker = makeWorker({ timeout: 100 });
    const queue = worker.bindQueue();
    worker.setConcurrency(3);
    const longer = queue.add({ name: 'longer', ms: [250] }, { timeout: 300 });
    const shorter = queue.add({ name: 'shorter', ms: [80] }, { timeout: 50 });
    const plain = queue.add({ name: 'plain', ms: [150] });
    await vi.advanceTimersByTimeAsync(50);
    expect(shorter.status).toBe('failed');
    expect(plain.status).toBe('running');
    await vi.advanceTimersByTimeAsync(50);
    expect(plain.status).toBe('failed');
    expect(longer.status).toBe('running');
    await vi.advanceTimersByTimeAsync(150);
    expect(longer.status).toBe('succeeded');
    await expect(shorter.result()).rejects.toMatchObject({ name: 'TimeoutError', timeout: 50 });
    await expect(plain.result()).rejects.toMatchObject({ name: 'TimeoutError', timeout: 100 });
  });

  it('a per-job timeout works on a worker without one', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    const timed = queue.add({ name: 'timed', ms: [500] }, { timeout: 200 });
    const untimed = queue.add({ name: 'untimed', ms: [5000] });
    await vi.advanceTimersByTimeAsync(200);
    expect(timed.status).toBe('failed');
    await vi.advanceTimersByTimeAsync(300); // timed's handler settles at 500; untimed starts
    await vi.advanceTimersByTimeAsync(4999);
    expect(untimed.status).toBe('running');
    await vi.advanceTimersByTimeAsync(1);
    expect(untimed.status).toBe('succeeded');
  });

  it('the job fails with the TimeoutError even if the handler then rejects with an error of its own', async () => {
    const worker = makeWorker({ timeout: 100 });
    const handle = worker.bindQueue().add({ name: 'a', ms: [300], reject: true });
    const failed = vi.fn();
    worker.on('failed', failed);
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await outcome).toBeInstanceOf(TimeoutError);
    expect(failed).toHaveBeenCalledTimes(1);
    expect(failed.mock.calls[0]?.[1]).toBeInstanceOf(TimeoutError);
  });
});

describe('a handler that ignores its signal keeps its slot', () => {
  it('numProcessing stays 1 and no other job starts until it settles (concurrency 1)', async () => {
    const worker = makeWorker({ timeout: 100 });
    const queue = worker.bindQueue();
    const slow = queue.add({ name: 'slow', ms: [1000] });
    const next = queue.add({ name: 'next', ms: [10] });
    await vi.advanceTimersByTimeAsync(100);
    expect(slow.status).toBe('failed');
    expect(worker.numProcessing).toBe(1);
    expect(next.status).toBe('waiting');
    expect(worker.numPending).toBe(1);
    await vi.advanceTimersByTimeAsync(899);
    expect(recordsOf('next')).toEqual([]);
    expect(worker.numProcessing).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(recordsOf('next').map((r) => r.start)).toEqual([1000]);
    expect(maxInFlight).toBe(1);
    await vi.advanceTimersByTimeAsync(10);
    expect(next.status).toBe('succeeded');
    expect(worker.numProcessing).toBe(0);
  });

  it('concurrency stays a hard ceiling with several slots', async () => {
    const worker = makeWorker({ timeout: 50, concurrency: 2 });
    const queue = worker.bindQueue();
    for (let i = 0; i < 6; i++) queue.add({ name: `j${i}`, ms: [200] });
    await vi.advanceTimersByTimeAsync(2000);
    expect(records).toHaveLength(6);
    expect(maxInFlight).toBe(2);
    expect(records.map((r) => r.start)).toEqual([0, 0, 200, 200, 400, 400]);
  });

  it('waitUntilIdle waits for the handler that ignored its timeout', async () => {
    const worker = makeWorker({ timeout: 100 });
    const handle = worker.bindQueue().add({ name: 'a', ms: [1000] });
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    await vi.advanceTimersByTimeAsync(500);
    expect(handle.status).toBe('failed');
    expect(idle).toBe(false);
    expect(worker.status).toBe('running');
    await vi.advanceTimersByTimeAsync(500);
    expect(idle).toBe(true);
    expect(worker.status).toBe('idle');
  });

  it('a handler that honours its signal frees its slot at the timeout', async () => {
    const worker = makeWorker({ timeout: 100 });
    const queue = worker.bindQueue();
    queue.add({ name: 'a', ms: [1000], honourSignal: true });
    const next = queue.add({ name: 'next', ms: [10] });
    await vi.advanceTimersByTimeAsync(100);
    expect(recordsOf('next').map((r) => r.start)).toEqual([100]);
    await vi.advanceTimersByTimeAsync(10);
    expect(next.status).toBe('succeeded');
  });
});

describe('the final attempt', () => {
  it('fails the handle at the timeout, not when the handler settles', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 2 } });
    const handle = worker.bindQueue().add({ name: 'a', ms: [150, 5000] });
    let rejectedAt: number | undefined;
    handle.result().catch(() => (rejectedAt = elapsed()));
    // Attempt 1 times out at 100 and settles at 150, when attempt 2 starts; it times out at 250.
    await vi.advanceTimersByTimeAsync(150);
    expect(recordsOf('a').map((r) => r.start)).toEqual([0, 150]);
    expect(rejectedAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(99);
    expect(handle.status).toBe('running');
    await vi.advanceTimersByTimeAsync(1);
    await flushMicrotasks();
    expect(handle.status).toBe('failed');
    expect(rejectedAt).toBe(250);
    expect(worker.numProcessing).toBe(1);
  });

  it('emits `failed` and `dead` at the timeout, once, and nothing when the handler later settles', async () => {
    const worker = makeWorker({ timeout: 100 });
    const events: string[] = [];
    worker.on('failed', (job, error) => events.push(`failed ${job.data.name} ${(error as Error).name} @${elapsed()}`));
    worker.on('dead', (job) => events.push(`dead ${job.data.name} @${elapsed()}`));
    worker.on('completed', (job) => events.push(`completed ${job.data.name} @${elapsed()}`));
    const handle = worker.bindQueue().add({ name: 'a', ms: [1000] });
    await vi.advanceTimersByTimeAsync(2000);
    expect(events).toEqual(['failed a TimeoutError @100', 'dead a @100']);
    expect(handle.status).toBe('failed');
    expect(worker.deadLetters).toHaveLength(1);
    expect(worker.deadLetters[0]?.error).toBeInstanceOf(TimeoutError);
    expect(worker.deadLetters[0]?.failedAt.getTime()).toBe(t0 + 100);
  });

  it('a late success after the timeout does not turn the failed job into a success', async () => {
    const worker = makeWorker({ timeout: 100 });
    const handle = worker.bindQueue().add({ name: 'a', ms: [300] });
    const outcome = handle.result().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await vi.advanceTimersByTimeAsync(300);
    expect(recordsOf('a')[0]?.end).toBe(300);
    expect(handle.status).toBe('failed');
    expect(await outcome).toEqual({ error: expect.any(TimeoutError) });
  });
});

describe('retrying after a timeout', () => {
  it('schedules the retry only once the handler has settled: never two attempts in flight', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 3 } });
    const retrying: Array<[string, number]> = [];
    worker.on('retrying', (_job, error, delayMs) => retrying.push([(error as Error).name, elapsed() + (delayMs as number)]));
    const handle = worker.bindQueue().add({ name: 'a', ms: [1000, 20] });
    await vi.advanceTimersByTimeAsync(999);
    expect(recordsOf('a')).toHaveLength(1);
    expect(worker.numProcessing).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(recordsOf('a').map((r) => [r.attempt, r.start])).toEqual([
      [1, 0],
      [2, 1000],
    ]);
    await vi.advanceTimersByTimeAsync(20);
    expect(handle.status).toBe('succeeded');
    expect(doubleAttempts).toBe(0);
    expect(retrying).toEqual([['TimeoutError', 1000]]);
  });

  it('the backoff counts from when the handler settled', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 2, backoff: { type: 'fixed', delay: 50 } } });
    const handle = worker.bindQueue().add({ name: 'a', ms: [400, 10] });
    await vi.advanceTimersByTimeAsync(1000);
    expect(recordsOf('a').map((r) => r.start)).toEqual([0, 450]);
    expect(handle.status).toBe('succeeded');
    expect(doubleAttempts).toBe(0);
  });

  it('retries at once when the handler honours its signal', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 2 } });
    const handle = worker.bindQueue().add({ name: 'a', ms: [1000, 10], honourSignal: true });
    await vi.advanceTimersByTimeAsync(100);
    expect(recordsOf('a').map((r) => r.start)).toEqual([0, 100]);
    await vi.advanceTimersByTimeAsync(10);
    expect(handle.status).toBe('succeeded');
  });

  it('a timed-out attempt whose handler later resolves is still retried', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 2 } });
    const handle = worker.bindQueue().add({ name: 'a', ms: [300, 10] });
    await vi.advanceTimersByTimeAsync(310);
    expect(recordsOf('a').map((r) => r.attempt)).toEqual([1, 2]);
    await expect(handle.result()).resolves.toBe('a:2');
  });

  it('each attempt gets a fresh signal and a fresh timeout', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 3 } });
    const handle = worker.bindQueue().add({ name: 'a', ms: [150, 150, 90] });
    await vi.advanceTimersByTimeAsync(1000);
    const attempts = recordsOf('a');
    expect(attempts.map((r) => [r.attempt, r.start])).toEqual([
      [1, 0],
      [2, 150],
      [3, 300],
    ]);
    expect(attempts.map((r) => r.abortedAtStart)).toEqual([false, false, false]);
    expect(attempts.map((r) => r.signal.aborted)).toEqual([true, true, false]);
    expect(attempts[0]?.signal).not.toBe(attempts[1]?.signal);
    expect(handle.status).toBe('succeeded');
    expect(handle.attempts).toBe(3);
  });

  it("the last attempt's timeout fails the job with every attempt used", async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 2 } });
    const events: string[] = [];
    worker.on('retrying', (job) => events.push(`retrying #${job.attempt} @${elapsed()}`));
    worker.on('failed', (job) => events.push(`failed #${job.attempt} @${elapsed()}`));
    const handle = worker.bindQueue().add({ name: 'a', ms: [200, 200] });
    await vi.advanceTimersByTimeAsync(1000);
    expect(events).toEqual(['retrying #1 @200', 'failed #2 @300']);
    expect(handle.attempts).toBe(2);
    expect(doubleAttempts).toBe(0);
    expect(maxInFlight).toBe(1);
  });
});
