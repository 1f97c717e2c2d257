import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueueFullError, Strategy, Worker, type Job, type RetryOptions, type WorkerOptions } from '../src/index.js';
import { captureWarnings, flushMicrotasks } from './helpers.js';

/**
 * Retries (SPEC 6): attempts, backoff schedules and functions, retryIf, and how a retried job
 * waits as a delayed job of its own source. Everything runs on fake timers.
 */

/** What a test job does: fail its first `fails` attempts (sync throw or async reject), then return `value`. */
interface Script {
  name: string;
  fails?: number;
  /** Fail on every attempt. */
  always?: boolean;
  async?: boolean;
  /** Ms an attempt takes (virtual time) before it settles. */
  ms?: number;
}

interface Start {
  name: string;
  attempt: number;
  at: number;
  source: string;
}

let t0 = 0;
let starts: Start[] = [];

function elapsed(): number {
  return Date.now() - t0;
}

/** The error attempt `attempt` of `name` fails with, so tests can tell attempts apart. */
class AttemptError extends Error {
  constructor(
    readonly job: string,
    readonly attempt: number,
  ) {
    super(`${job} attempt ${attempt} failed`);
  }
}

function scripted(job: Job<Script>): unknown {
  const script = job.data;
  starts.push({ name: script.name, attempt: job.attempt, at: elapsed(), source: job.source });
  const fail = script.always === true || job.attempt <= (script.fails ?? 0);
  const outcome = (): string => {
    if (fail) throw new AttemptError(script.name, job.attempt);
    return `${script.name}:${job.attempt}`;
  };
  if (script.ms !== undefined) {
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        try {
          resolve(outcome());
        } catch (error) {
          reject(error);
        }
      }, script.ms);
    });
  }
  if (script.async === true) return Promise.resolve().then(outcome);
  return outcome();
}

function makeWorker(options?: WorkerOptions): Worker<Script, string> {
  return new Worker<Script, string>(scripted as (job: Job<Script>) => string, options);
}

/** Records every event of a worker as a short string, in order. */
function recordEvents(worker: Worker<Script, string>): string[] {
  const events: string[] = [];
  worker.on('active', (job) => events.push(`active ${job.data.name}#${job.attempt}`));
  worker.on('completed', (job, result) => events.push(`completed ${job.data.name} ${String(result)}`));
  worker.on('retrying', (job, error, delayMs) => events.push(`retrying ${job.data.name} ${(error as Error).message} ${delayMs}`));
  worker.on('failed', (job, error) => events.push(`failed ${job.data.name} ${(error as Error).message}`));
  worker.on('dead', (job, error) => events.push(`dead ${job.data.name} ${(error as Error).message}`));
  return events;
}

function startsOf(name: string): Start[] {
  return starts.filter((s) => s.name === name);
}

beforeEach(() => {
  vi.useFakeTimers();
  t0 = Date.now();
  starts = [];
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('attempts', () => {
  it('defaults to 1: a failing job runs once and fails', async () => {
    const worker = makeWorker();
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add({ name: 'a', always: true });
    await expect(handle.result()).rejects.toBeInstanceOf(AttemptError);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(startsOf('a')).toHaveLength(1);
    expect(handle.status).toBe('failed');
    expect(handle.attempts).toBe(1);
    expect(events.filter((e) => e.startsWith('retrying'))).toEqual([]);
  });

  it("runs `attempts` attempts in all, then rejects with the last attempt's error", async () => {
    const worker = makeWorker({ retry: { attempts: 3 } });
    const handle = worker.bindQueue().add({ name: 'a', always: true, async: true });
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(100);
    const error = await outcome;
    expect(error).toBeInstanceOf(AttemptError);
    expect((error as AttemptError).attempt).toBe(3);
    expect(startsOf('a').map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(handle.attempts).toBe(3);
    expect(handle.status).toBe('failed');
  });

  it("a job that succeeds on a retry resolves with that attempt's result and is not dead-lettered", async () => {
    const worker = makeWorker({ retry: { attempts: 5 } });
    const handle = worker.bindQueue().add({ name: 'a', fails: 2 });
    const result = handle.result();
    await vi.advanceTimersByTimeAsync(100);
    await expect(result).resolves.toBe('a:3');
    expect(handle.status).toBe('succeeded');
    expect(handle.attempts).toBe(3);
    expect(worker.deadLetters).toEqual([]);
  });

  it('the handler sees attempt 1, 2, 3... and the handle counts attempts started', async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 100 } } });
    const handle = worker.bindQueue().add({ name: 'a', always: true });
    await flushMicrotasks();
    expect(handle.attempts).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.attempts).toBe(2);
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.attempts).toBe(3);
    expect(startsOf('a').map((s) => s.attempt)).toEqual([1, 2, 3]);
  });

  it('a retried job keeps its id, its data and its source', async () => {
    const worker = makeWorker({ retry: { attempts: 2 } });
    const seen: Array<{ id: string; data: Script; source: string }> = [];
    worker.on('active', (job) => seen.push({ id: job.id, data: job.data, source: job.source }));
    const data: Script = { name: 'a', fails: 1 };
    const queue = worker.bindQueue({ name: 'mail' });
    const handle = queue.add(data, { id: 'job-7' });
    await vi.advanceTimersByTimeAsync(10);
    expect(handle.status).toBe('succeeded');
    expect(seen).toEqual([
      { id: 'job-7', data, source: 'mail' },
      { id: 'job-7', data, source: 'mail' },
    ]);
    expect(seen[1]?.data).toBe(data);
  });
});

describe("per-job retry overrides the worker's, field by field", () => {
  const workerRetry: RetryOptions = { attempts: 2, backoff: { type: 'fixed', delay: 100 } };

  it("attempts only: more attempts, the worker's backoff", async () => {
    const worker = makeWorker({ retry: workerRetry });
    worker.bindQueue().add({ name: 'a', always: true }, { retry: { attempts: 4 } });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 100, 200, 300]);
  });

  it("backoff only: the worker's attempts, the job's backoff", async () => {
    const worker = makeWorker({ retry: workerRetry });
    worker.bindQueue().add({ name: 'a', always: true }, { retry: { backoff: { type: 'fixed', delay: 10 } } });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 10]);
  });

  it("retryIf only: the job's predicate, the worker's attempts", async () => {
    const worker = makeWorker({ retry: { ...workerRetry, attempts: 5 } });
    const handle = worker.bindQueue().add({ name: 'a', always: true }, { retry: { retryIf: (_error, attempt) => attempt < 2 } });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 100]);
    expect(handle.status).toBe('failed');
  });

  it("attempts: 1 on a job turns the worker's retries off for it", async () => {
    const worker = makeWorker({ retry: workerRetry });
    const queue = worker.bindQueue();
    queue.add({ name: 'a', always: true }, { retry: { attempts: 1 } });
    queue.add({ name: 'b', always: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a')).toHaveLength(1);
    expect(startsOf('b')).toHaveLength(2);
  });

  it('a job can retry on a worker that has no retry policy', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    const handle = queue.add({ name: 'a', fails: 2 }, { retry: { attempts: 3 } });
    queue.add({ name: 'b', always: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(handle.status).toBe('succeeded');
    expect(startsOf('a')).toHaveLength(3);
    expect(startsOf('b')).toHaveLength(1);
  });

  it("the worker's retryIf still applies to a job that overrides only attempts", async () => {
    const retryIf = vi.fn((_error: unknown, _attempt: number) => false);
    const worker = makeWorker({ retry: { attempts: 2, retryIf } });
    worker.bindQueue().add({ name: 'a', always: true }, { retry: { attempts: 3 } });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a')).toHaveLength(1);
    expect(retryIf).toHaveBeenCalledTimes(1);
  });
});

describe('backoff schedules', () => {
  it('fixed waits `delay` after each failed attempt, and not a tick less', async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 100 } } });
    const events = recordEvents(worker);
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(99);
    expect(startsOf('a')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(startsOf('a')).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 100, 200]);
    expect(events.filter((e) => e.startsWith('retrying'))).toEqual(['retrying a a attempt 1 failed 100', 'retrying a a attempt 2 failed 100']);
  });

  it('fixed backoff counts from when the attempt failed, not from when it started', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } });
    worker.bindQueue().add({ name: 'a', always: true, ms: 50 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 150]);
  });

  it('exponential waits delay * 2^(attempt - 1)', async () => {
    const worker = makeWorker({ retry: { attempts: 5, backoff: { type: 'exponential', delay: 100 } } });
    const delays: number[] = [];
    worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(delays).toEqual([100, 200, 400, 800]);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 100, 300, 700, 1500]);
  });

  it('exponential is capped at maxDelay', async () => {
    const worker = makeWorker({ retry: { attempts: 5, backoff: { type: 'exponential', delay: 100, maxDelay: 300 } } });
    const delays: number[] = [];
    worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(delays).toEqual([100, 200, 300, 300]);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 100, 300, 600, 900]);
  });

  it('jitter 0 (or none) waits exactly the schedule, whatever Math.random says', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.9);
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100, jitter: 0 } } });
    const delays: number[] = [];
    worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(delays).toEqual([100]);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 100]);
  });

  it.each([0, 0.25, 0.5, 0.75, 0.999_999])('jitter 0.5 keeps the wait in [delay * 0.5, delay] (Math.random() = %s)', async (random) => {
    const spy = vi.spyOn(Math, 'random').mockReturnValue(random);
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100, jitter: 0.5 } } });
    const delays: number[] = [];
    worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(spy).toHaveBeenCalled();
    expect(delays).toHaveLength(1);
    const delay = delays[0] as number;
    expect(delay).toBeGreaterThanOrEqual(50);
    expect(delay).toBeLessThanOrEqual(100);
    expect(startsOf('a')).toHaveLength(2);
  });

  it('jitter makes the wait depend on Math.random, and the retry waits the delay it reported', async () => {
    const delays: number[] = [];
    for (const random of [0, 0.5]) {
      vi.spyOn(Math, 'random').mockReturnValue(random);
      const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100, jitter: 0.5 } } });
      worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
      starts = [];
      t0 = Date.now();
      worker.bindQueue().add({ name: 'a', always: true });
      await vi.advanceTimersByTimeAsync(1000);
      // 0.5 maps to the middle of [1 - jitter, 1] whichever end random 0 maps to: 75 ms.
      if (random === 0.5) {
        expect(delays[1]).toBe(75);
        expect(startsOf('a').map((s) => s.at)).toEqual([0, 75]);
      }
    }
    expect(delays[0]).not.toBe(delays[1]);
  });

  it('jitter applies to the capped exponential wait', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const worker = makeWorker({ retry: { attempts: 4, backoff: { type: 'exponential', delay: 100, maxDelay: 200, jitter: 0.5 } } });
    const delays: number[] = [];
    worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(delays).toEqual([75, 150, 150]);
  });

  it('jitter 1 may shorten the wait down to (almost) nothing but never below 0', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999_999);
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100, jitter: 1 } } });
    const delays: number[] = [];
    worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(delays).toHaveLength(1);
    expect(delays[0]).toBeGreaterThanOrEqual(0);
    expect(delays[0]).toBeLessThanOrEqual(100);
    expect(startsOf('a')).toHaveLength(2);
  });
});

describe('backoff function', () => {
  it('gets the number of the attempt that failed and its error, and returns the wait in ms', async () => {
    const calls: Array<[number, unknown]> = [];
    const backoff = (attempt: number, error: unknown): number => {
      calls.push([attempt, error]);
      return attempt * 50;
    };
    const worker = makeWorker({ retry: { attempts: 4, backoff } });
    const delays: number[] = [];
    worker.on('retrying', (_job, _error, delayMs) => delays.push(delayMs as number));
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.map(([attempt]) => attempt)).toEqual([1, 2, 3]);
    expect(calls.map(([, error]) => (error as AttemptError).attempt)).toEqual([1, 2, 3]);
    expect(delays).toEqual([50, 100, 150]);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 50, 150, 300]);
  });

  it('is not called once the attempts are used up', async () => {
    const backoff = vi.fn((_attempt: number, _error: unknown) => 10);
    const worker = makeWorker({ retry: { attempts: 2, backoff } });
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a')).toHaveLength(2);
    expect(backoff).toHaveBeenCalledTimes(1);
  });

  it('that throws fails the job for good with its own error, and is reported on `error`', async () => {
    const hookError = new Error('backoff blew up');
    const worker = makeWorker({
      retry: {
        attempts: 3,
        backoff: () => {
          throw hookError;
        },
      },
    });
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add({ name: 'a', always: true });
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    expect(errors).toEqual([hookError]);
    expect(startsOf('a')).toHaveLength(1);
    expect(handle.status).toBe('failed');
    expect(handle.attempts).toBe(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(AttemptError);
    expect(events.filter((e) => !e.startsWith('active'))).toEqual(['failed a a attempt 1 failed', 'dead a a attempt 1 failed']);
    expect(worker.deadLetters).toHaveLength(1);
  });

  it.each([
    ['NaN', Number.NaN],
    ['a negative number', -1],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a string', '10'],
    ['undefined', undefined],
  ])('that returns %s fails the job for good and is reported on `error`', async (_label, value) => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: () => value as number } });
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    const retrying = vi.fn();
    worker.on('retrying', retrying);
    const handle = worker.bindQueue().add({ name: 'a', always: true });
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TypeError);
    expect(retrying).not.toHaveBeenCalled();
    expect(startsOf('a')).toHaveLength(1);
    expect(handle.status).toBe('failed');
    expect(await outcome).toBeInstanceOf(AttemptError);
  });

  it('a broken backoff function with nobody listening on `error` lets nothing escape to the host: a process warning says it', async () => {
    const { warnings, stop } = captureWarnings();
    const escaped: unknown[] = [];
    const onEscape = (error: unknown): void => void escaped.push(error);
    process.on('uncaughtException', onEscape);
    process.on('unhandledRejection', onEscape);
    try {
      const worker = makeWorker({
        retry: {
          attempts: 3,
          backoff: () => {
            throw new Error('nope');
          },
        },
      });
      const handle = worker.bindQueue().add({ name: 'a', always: true });
      await vi.advanceTimersByTimeAsync(1000);
      expect(handle.status).toBe('failed');
      await worker.waitUntilIdle();
      // Give a stray rejection a chance to be reported on the real event loop.
      vi.useRealTimers();
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(escaped).toEqual([]);
      expect(warnings.length).toBeGreaterThan(0);
      for (const warning of warnings) {
        expect(warning.name).toBe('QmuxWarning');
        expect(warning.message).toBe('Error: nope');
        expect(warning.detail).toContain('a retry hook (retryIf or backoff) threw; listen to its "error" event to handle this.');
      }
    } finally {
      stop();
      process.off('uncaughtException', onEscape);
      process.off('unhandledRejection', onEscape);
    }
  });
});

describe('retryIf', () => {
  it('false fails the job at once: no retry, `failed` and `dead` once', async () => {
    const retryIf = vi.fn((_error: unknown, _attempt: number) => false);
    const worker = makeWorker({ retry: { attempts: 5, retryIf } });
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add({ name: 'a', always: true });
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a')).toHaveLength(1);
    expect(handle.attempts).toBe(1);
    expect(((await outcome) as AttemptError).attempt).toBe(1);
    expect(events).toEqual(['active a#1', 'failed a a attempt 1 failed', 'dead a a attempt 1 failed']);
  });

  it('gets the error and the number of the attempt that failed', async () => {
    const calls: Array<[number, number]> = [];
    const worker = makeWorker({
      retry: {
        attempts: 3,
        retryIf: (error, attempt) => {
          calls.push([(error as AttemptError).attempt, attempt]);
          return true;
        },
      },
    });
    worker.bindQueue().add({ name: 'a', always: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toEqual([
      [1, 1],
      [2, 2],
    ]);
  });

  it('decides per error: transient errors are retried, a fatal one stops the job', async () => {
    class Fatal extends Error {}
    let calls = 0;
    const worker = new Worker<string, string>(
      () => {
        calls++;
        throw calls < 3 ? new Error('transient') : new Fatal('fatal');
      },
      { retry: { attempts: 10, retryIf: (error) => !(error instanceof Fatal) } },
    );
    const handle = worker.bindQueue().add('x');
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(3);
    expect(await outcome).toBeInstanceOf(Fatal);
    expect(handle.attempts).toBe(3);
  });
});

describe('a retried job waits as a delayed job of its own source', () => {
  it('is `delayed` between attempts, counts as pending, and keeps waitUntilIdle waiting', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 500 } } });
    const queue = worker.bindQueue();
    const handle = queue.add({ name: 'a', fails: 1 });
    let idle = false;
    await flushMicrotasks();
    void worker.waitUntilIdle().then(() => (idle = true));
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.status).toBe('delayed');
    expect(worker.numPending).toBe(1);
    expect(worker.numProcessing).toBe(0);
    expect(queue.length).toBe(1);
    expect(worker.status).toBe('running');
    expect(idle).toBe(false);
    await vi.advanceTimersByTimeAsync(400);
    expect(handle.status).toBe('succeeded');
    expect(idle).toBe(true);
    expect(worker.numPending).toBe(0);
  });

  it('joins its queue in due-time order: jobs added later but due earlier run first', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 1000 } } });
    const queue = worker.bindQueue();
    queue.add({ name: 'a', fails: 1 });
    await vi.advanceTimersByTimeAsync(100);
    queue.add({ name: 'b' }, { delay: 500 }); // due at 600
    queue.add({ name: 'c' }, { delay: 1500 }); // due at 1600
    await vi.advanceTimersByTimeAsync(200);
    queue.add({ name: 'd' }); // due now, at 300
    await vi.advanceTimersByTimeAsync(5000);
    expect(starts.map((s) => `${s.name}#${s.attempt}@${s.at}`)).toEqual(['a#1@0', 'd#1@300', 'b#1@600', 'a#2@1000', 'c#1@1600']);
  });

  it('a retry that comes due while the slot is busy runs before jobs that came due after it', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } });
    const queue = worker.bindQueue();
    queue.add({ name: 'a', fails: 1 }); // fails at 0, due again at 100
    queue.add({ name: 'slow', ms: 1000 }); // runs 0..1000
    queue.add({ name: 'b' }, { delay: 200 }); // due at 200
    await vi.advanceTimersByTimeAsync(500);
    queue.add({ name: 'c' }); // due at 500
    await vi.advanceTimersByTimeAsync(2000);
    expect(starts.map((s) => `${s.name}#${s.attempt}`)).toEqual(['a#1', 'slow#1', 'a#2', 'b#1', 'c#1']);
  });

  it('in a priority queue, the retry keeps its priority number', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } });
    const pq = worker.bindPriorityQueue();
    pq.add({ name: 'urgent', fails: 1 }, 1);
    pq.add({ name: 'slow', ms: 500 }, 2);
    pq.add({ name: 'later' }, 5);
    await vi.advanceTimersByTimeAsync(2000);
    expect(starts.map((s) => `${s.name}#${s.attempt}`)).toEqual(['urgent#1', 'slow#1', 'urgent#2', 'later#1']);
  });

  it('the strategy applies to it: a retried low-ranked job does not jump ahead of a higher-ranked source', async () => {
    const worker = makeWorker({ strategy: Strategy.Priority, retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } });
    const high = worker.bindQueue({ name: 'high', priority: 1 });
    const low = worker.bindQueue({ name: 'low', priority: 2 });
    low.add({ name: 'l', fails: 1 });
    await flushMicrotasks();
    high.add({ name: 'h1', ms: 300 });
    high.add({ name: 'h2' }, { delay: 200 });
    await vi.advanceTimersByTimeAsync(2000);
    expect(starts.map((s) => `${s.source}:${s.name}#${s.attempt}`)).toEqual(['low:l#1', 'high:h1#1', 'high:h2#1', 'low:l#2']);
  });

  it('re-enters its source even when the source is at capacity', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } });
    const queue = worker.bindQueue({ capacity: 1 });
    const a = queue.add({ name: 'a', fails: 1, ms: 10 });
    await flushMicrotasks();
    expect(a.status).toBe('running');
    const b = queue.add({ name: 'b' }); // the queue is now full
    expect(() => queue.add({ name: 'x' })).toThrow(QueueFullError);
    worker.pause(); // keep b waiting while a fails
    await vi.advanceTimersByTimeAsync(10);
    expect(a.status).toBe('delayed');
    expect(queue.length).toBe(2);
    expect(worker.numPending).toBe(2);
    expect(() => queue.add({ name: 'x' })).toThrow(QueueFullError);
    expect(queue.tryAdd({ name: 'x' })).toBeUndefined();
    worker.resume();
    await vi.advanceTimersByTimeAsync(1000);
    expect(a.status).toBe('succeeded');
    expect(b.status).toBe('succeeded');
    expect(starts.map((s) => `${s.name}#${s.attempt}`)).toEqual(['a#1', 'b#1', 'a#2']);
  });

  it('re-enters its source even after the source was closed', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } });
    const queue = worker.bindQueue();
    const handle = queue.add({ name: 'a', fails: 1, ms: 10 });
    await flushMicrotasks();
    queue.close();
    await vi.advanceTimersByTimeAsync(1000);
    expect(handle.status).toBe('succeeded');
    expect(startsOf('a')).toHaveLength(2);
  });

  it('a retry after a synchronous failure arms its wake-up for the backoff, not for an epoch-sized delay', async () => {
    // A synchronous handler fails inside the dispatch loop; the wake-up for its retry must be
    // armed for the backoff (100 ms), not for an epoch-sized delay that Node clamps to 1 ms with a
    // TimeoutOverflowWarning.
    const spy = vi.spyOn(globalThis, 'setTimeout');
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } });
    worker.bindQueue().add({ name: 'a', fails: 1 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 100]);
    const delays = spy.mock.calls.map((call) => Number(call[1] ?? 0));
    expect(delays.filter((ms) => ms > 2 ** 31 - 1)).toEqual([]);
  });
});

describe('events', () => {
  it('`retrying (job, error, delayMs)` per retried attempt, then `failed` once and `dead` once', async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 10 } } });
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add({ name: 'a', always: true, async: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(handle.status).toBe('failed');
    expect(events).toEqual([
      'active a#1',
      'retrying a a attempt 1 failed 10',
      'active a#2',
      'retrying a a attempt 2 failed 10',
      'active a#3',
      'failed a a attempt 3 failed',
      'dead a a attempt 3 failed',
    ]);
  });

  it('`retrying` passes the job handle itself, still counting the attempt that failed', async () => {
    const worker = makeWorker({ retry: { attempts: 2, backoff: { type: 'fixed', delay: 10 } } });
    const seen: Array<{ same: boolean; attempt: number; status: string }> = [];
    const queue = worker.bindQueue();
    const handle = queue.add({ name: 'a', always: true });
    worker.on('retrying', (job) => seen.push({ same: job === (handle as unknown), attempt: job.attempt, status: job.status }));
    await vi.advanceTimersByTimeAsync(100);
    expect(seen).toEqual([{ same: true, attempt: 1, status: 'delayed' }]);
  });

  it('a job that succeeds after retries emits `completed` once and neither `failed` nor `dead`', async () => {
    const worker = makeWorker({ retry: { attempts: 3 } });
    const events = recordEvents(worker);
    worker.bindQueue().add({ name: 'a', fails: 2, async: true });
    await vi.advanceTimersByTimeAsync(100);
    expect(events.filter((e) => !e.startsWith('active'))).toEqual([
      'retrying a a attempt 1 failed 0',
      'retrying a a attempt 2 failed 0',
      'completed a a:3',
    ]);
  });

  it('a synchronous throw and an async rejection are retried alike', async () => {
    const worker = makeWorker({ retry: { attempts: 2 } });
    const queue = worker.bindQueue();
    const sync = queue.add({ name: 'sync', fails: 1 });
    const async = queue.add({ name: 'async', fails: 1, async: true });
    await vi.advanceTimersByTimeAsync(100);
    expect([sync.status, async.status]).toEqual(['succeeded', 'succeeded']);
    expect(startsOf('sync')).toHaveLength(2);
    expect(startsOf('async')).toHaveLength(2);
  });
});

describe('retry hooks and options', () => {
  it("a per-job field left undefined does not override the worker's", async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 100 } } });
    const fromConfig: { attempts?: number } = {};
    worker.bindQueue().add({ name: 'a', always: true }, { retry: { attempts: fromConfig.attempts, backoff: { type: 'fixed', delay: 10 } } });
    await vi.advanceTimersByTimeAsync(1000);
    expect(startsOf('a').map((s) => s.at)).toEqual([0, 10, 20]);
  });

  it('a retryIf that throws fails the job for good and is reported on `error`', async () => {
    const hookError = new Error('retryIf blew up');
    const worker = makeWorker({
      retry: {
        attempts: 3,
        retryIf: () => {
          throw hookError;
        },
      },
    });
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    const handle = worker.bindQueue().add({ name: 'a', always: true });
    const outcome = handle.result().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    expect(errors).toEqual([hookError]);
    expect(startsOf('a')).toHaveLength(1);
    expect(await outcome).toBeInstanceOf(AttemptError);
  });

  it.each([
    ['attempts 0', { attempts: 0 }],
    ['attempts 1.5', { attempts: 1.5 }],
    ['an unknown backoff type', { backoff: { type: 'linear', delay: 10 } }],
    ['a negative delay', { backoff: { type: 'fixed', delay: -1 } }],
    ['jitter above 1', { backoff: { type: 'fixed', delay: 10, jitter: 2 } }],
    ['a retryIf that is not a function', { retryIf: true }],
  ])('a retry option with %s is refused where it is given, naming it', (_label, retry) => {
    expect(() => makeWorker({ retry: retry as RetryOptions })).toThrow(/retry/);
    const queue = makeWorker({ autoRun: false }).bindQueue();
    expect(() => queue.add({ name: 'a' }, { retry: retry as RetryOptions })).toThrow(/retry/);
    expect(queue.length).toBe(0);
  });
});
