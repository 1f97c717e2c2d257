import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CancelledError, QueueClosedError, QueueFullError, Topic, Worker, type DeadLetter, type Job, type WorkerOptions } from '../src/index.js';
import { flushMicrotasks } from './helpers.js';

/**
 * Dead letters (SPEC 6): what `worker.deadLetters` keeps, its bound, and `redrive`.
 * Fake timers throughout, so `failedAt` is exact.
 */

interface Payload {
  name: string;
  /** Calls of the handler for this name that fail before one succeeds (over every attempt and redrive); `Infinity` fails every time. */
  fails: number;
}

class JobError extends Error {
  constructor(
    readonly job: string,
    readonly attempt: number,
  ) {
    super(`${job} failed on attempt ${attempt}`);
  }
}

let starts: Array<{ name: string; attempt: number; source: string }> = [];
let calls = new Map<string, number>();

function handler(job: Job<Payload>): string {
  starts.push({ name: job.data.name, attempt: job.attempt, source: job.source });
  const call = (calls.get(job.data.name) ?? 0) + 1;
  calls.set(job.data.name, call);
  if (call <= job.data.fails) throw new JobError(job.data.name, job.attempt);
  return `${job.data.name} ok`;
}

function makeWorker(options?: WorkerOptions): Worker<Payload, string> {
  return new Worker<Payload, string>(handler, options);
}

/** Lets every due job run (handlers here are synchronous). */
async function settle(ms = 0): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
  await flushMicrotasks();
}

function names(entries: readonly DeadLetter<Payload>[]): string[] {
  return entries.map((entry) => entry.data.name);
}

beforeEach(() => {
  vi.useFakeTimers();
  starts = [];
  calls = new Map();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('worker.deadLetters', () => {
  it('keeps a job that failed its last attempt as { id, data, source, error, attempts, failedAt }', async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 100 } } });
    const queue = worker.bindQueue({ name: 'mail' });
    const data: Payload = { name: 'a', fails: Infinity };
    const t0 = Date.now();
    const handle = queue.add(data, { id: 'job-1' });
    await settle(1000);
    expect(handle.status).toBe('failed');
    expect(worker.deadLetters).toHaveLength(1);
    const entry = worker.deadLetters[0] as DeadLetter<Payload>;
    expect(entry.id).toBe('job-1');
    expect(entry.data).toBe(data);
    expect(entry.source).toBe('mail');
    expect(entry.error).toBeInstanceOf(JobError);
    expect((entry.error as JobError).attempt).toBe(3);
    expect(entry.attempts).toBe(3);
    expect(entry.failedAt).toBeInstanceOf(Date);
    expect(entry.failedAt.getTime()).toBe(t0 + 200);
    expect(Object.keys(entry).sort()).toEqual(['attempts', 'data', 'error', 'failedAt', 'id', 'source']);
  });

  it('gets a generated id when the job had none', async () => {
    const worker = makeWorker();
    const handle = worker.bindQueue().add({ name: 'a', fails: 1 });
    await settle();
    expect(worker.deadLetters[0]?.id).toBe(handle.id);
    expect(typeof handle.id).toBe('string');
  });

  it('is empty at first, and holds neither succeeded nor cancelled jobs', async () => {
    const worker = makeWorker({ retry: { attempts: 2 }, autoRun: false });
    expect(worker.deadLetters).toEqual([]);
    const queue = worker.bindQueue();
    queue.add({ name: 'ok', fails: 0 });
    queue.add({ name: 'ok-on-retry', fails: 1 });
    queue.add({ name: 'cancelled', fails: Infinity }).cancel();
    queue.add({ name: 'dead', fails: Infinity });
    worker.start();
    await settle(100);
    expect(names(worker.deadLetters)).toEqual(['dead']);
  });

  it('keeps jobs that retryIf gave up on and jobs that timed out', async () => {
    const worker = new Worker<string, string>(
      (job) => {
        if (job.data === 'hang') return new Promise<string>(() => {});
        throw new Error(job.data);
      },
      { retry: { attempts: 5, retryIf: () => false }, timeout: 100, concurrency: 2 },
    );
    const queue = worker.bindQueue();
    queue.add('boom');
    queue.add('hang');
    await settle(100);
    expect(worker.deadLetters.map((entry) => [entry.data, (entry.error as Error).name, entry.attempts])).toEqual([
      ['boom', 'Error', 1],
      ['hang', 'TimeoutError', 1],
    ]);
  });

  it('lists entries oldest first', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    for (const name of ['a', 'b', 'c']) queue.add({ name, fails: 1 });
    await settle();
    expect(names(worker.deadLetters)).toEqual(['a', 'b', 'c']);
  });

  it('is read-only: a frozen array that a caller cannot reorder or empty; read it again to see later changes', async () => {
    const worker = makeWorker({ deadLetterLimit: 2 });
    const queue = worker.bindQueue();
    for (const name of ['a', 'b']) queue.add({ name, fails: 1 });
    await settle();
    const seen = worker.deadLetters;
    expect(Object.isFrozen(seen)).toBe(true);
    expect(() => (seen as DeadLetter<Payload>[]).reverse()).toThrow(TypeError);
    expect(() => {
      (seen as DeadLetter<Payload>[]).length = 0;
    }).toThrow(TypeError);
    expect(worker.deadLetters).toBe(seen); // the same array while nothing changes
    queue.add({ name: 'c', fails: 1 });
    await settle();
    expect(names(seen)).toEqual(['a', 'b']);
    expect(names(worker.deadLetters)).toEqual(['b', 'c']); // the oldest dropped first
    worker.redrive(worker.deadLetters[0] as DeadLetter<Payload>);
    expect(names(worker.deadLetters)).toEqual(['c']);
  });

  it('the entry is already there when `dead` is emitted, with the same error', async () => {
    const worker = makeWorker();
    const seen: Array<{ listed: boolean; sameError: boolean }> = [];
    worker.on('dead', (job, error) => {
      const entry = worker.deadLetters.find((e) => e.id === job.id);
      seen.push({ listed: entry !== undefined, sameError: entry?.error === error });
    });
    worker.bindQueue().add({ name: 'a', fails: 1 });
    await settle();
    expect(seen).toEqual([{ listed: true, sameError: true }]);
  });
});

describe('deadLetterLimit', () => {
  it('bounds the list, dropping the oldest first', async () => {
    const worker = makeWorker({ deadLetterLimit: 2 });
    const queue = worker.bindQueue();
    for (const name of ['a', 'b', 'c', 'd']) queue.add({ name, fails: 1 });
    await settle();
    expect(names(worker.deadLetters)).toEqual(['c', 'd']);
  });

  it('0 keeps none, and jobs still fail', async () => {
    const worker = makeWorker({ deadLetterLimit: 0 });
    const failed = vi.fn();
    const dead = vi.fn();
    worker.on('failed', failed);
    worker.on('dead', dead);
    const handle = worker.bindQueue().add({ name: 'a', fails: 1 });
    await settle();
    expect(handle.status).toBe('failed');
    expect(failed).toHaveBeenCalledTimes(1);
    expect(worker.deadLetters).toEqual([]);
    // Nothing was dead-lettered, so nothing says it was.
    expect(dead).not.toHaveBeenCalled();
  });

  it('defaults to 1000', async () => {
    const worker = makeWorker({ autoRun: false });
    const queue = worker.bindQueue();
    for (let i = 0; i < 1001; i++) queue.add({ name: `j${i}`, fails: 1 });
    worker.start();
    await settle();
    expect(worker.deadLetters).toHaveLength(1000);
    expect(worker.deadLetters[0]?.data.name).toBe('j1');
    expect(worker.deadLetters[999]?.data.name).toBe('j1000');
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('rejects %s at construction, naming the option', (limit) => {
    expect(() => makeWorker({ deadLetterLimit: limit })).toThrow(/deadLetterLimit/);
  });

  it('an entry dropped by the bound can no longer be redriven', async () => {
    const worker = makeWorker({ deadLetterLimit: 1 });
    const queue = worker.bindQueue();
    queue.add({ name: 'a', fails: 1 });
    await settle();
    const dropped = worker.deadLetters[0] as DeadLetter<Payload>;
    queue.add({ name: 'b', fails: 1 });
    await settle();
    expect(names(worker.deadLetters)).toEqual(['b']);
    expect(() => worker.redrive(dropped)).toThrow(TypeError);
  });
});

describe('redrive(entry)', () => {
  it('removes the entry, adds the job to its source again and returns a new handle', async () => {
    const worker = makeWorker({ autoRun: false });
    const queue = worker.bindQueue({ name: 'mail' });
    const data: Payload = { name: 'a', fails: 1 };
    const first = queue.add(data, { id: 'job-1' });
    worker.start();
    await settle();
    const entry = worker.deadLetters[0] as DeadLetter<Payload>;
    worker.pause();
    const second = worker.redrive(entry);
    expect(second).not.toBe(first);
    expect(second.id).toBe('job-1');
    expect(second.status).toBe('waiting');
    expect(second.attempts).toBe(0);
    expect(worker.deadLetters).toEqual([]);
    expect(queue.length).toBe(1);
    expect(worker.numPending).toBe(1);
    worker.resume();
    await expect(second.result()).resolves.toBe('a ok');
    expect(first.status).toBe('failed');
    expect(starts).toEqual([
      { name: 'a', attempt: 1, source: 'mail' },
      { name: 'a', attempt: 1, source: 'mail' },
    ]);
  });

  it('counts attempts from 1 again: the job gets every retry once more', async () => {
    const worker = makeWorker({ retry: { attempts: 2 } });
    const queue = worker.bindQueue();
    queue.add({ name: 'a', fails: Infinity });
    await settle();
    expect(worker.deadLetters[0]?.attempts).toBe(2);
    const handle = worker.redrive(worker.deadLetters[0] as DeadLetter<Payload>);
    await settle();
    expect(starts.map((s) => s.attempt)).toEqual([1, 2, 1, 2]);
    expect(handle.attempts).toBe(2);
    expect(handle.status).toBe('failed');
  });

  it('a redriven job that fails again becomes a new dead letter', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    queue.add({ name: 'a', fails: Infinity });
    await settle();
    const entry = worker.deadLetters[0] as DeadLetter<Payload>;
    const handle = worker.redrive(entry);
    await settle();
    expect(handle.status).toBe('failed');
    expect(worker.deadLetters).toHaveLength(1);
    expect(worker.deadLetters[0]).not.toBe(entry);
    expect(worker.deadLetters[0]?.attempts).toBe(1);
  });

  it("keeps the job's own retry option", async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    queue.add({ name: 'a', fails: 3 }, { retry: { attempts: 2 } });
    await settle();
    const handle = worker.redrive(worker.deadLetters[0] as DeadLetter<Payload>);
    await settle();
    expect(handle.status).toBe('succeeded');
    expect(starts.map((s) => s.attempt)).toEqual([1, 2, 1, 2]);
  });

  it("puts a priority queue's job back with its priority number", async () => {
    const worker = makeWorker({ autoRun: false });
    const pq = worker.bindPriorityQueue();
    pq.add({ name: 'urgent', fails: 1 }, 0);
    worker.start();
    await settle();
    worker.pause();
    pq.add({ name: 'low', fails: 0 }, 5);
    worker.redrive(worker.deadLetters[0] as DeadLetter<Payload>);
    pq.add({ name: 'mid', fails: 0 }, 3);
    worker.resume();
    await settle();
    expect(starts.map((s) => s.name)).toEqual(['urgent', 'urgent', 'mid', 'low']);
  });

  it("puts a subscription's job back on that subscription only, not on the topic", async () => {
    const topic = new Topic<Payload>();
    const worker = makeWorker();
    const other = makeWorker();
    const sub = worker.subscribe(topic, { name: 'mine' });
    const otherSub = other.subscribe(topic);
    topic.publish({ name: 'm', fails: 2 }); // one failing delivery per worker
    await settle();
    expect(worker.deadLetters).toHaveLength(1);
    expect(other.deadLetters).toHaveLength(1);
    starts = [];
    worker.redrive(worker.deadLetters[0] as DeadLetter<Payload>);
    await settle();
    expect(starts).toEqual([{ name: 'm', attempt: 1, source: 'mine' }]);
    expect(sub.length + otherSub.length).toBe(0);
  });

  describe('refuses', () => {
    it('an entry of another worker, with a TypeError; both lists stay as they were', async () => {
      const a = makeWorker();
      const b = makeWorker();
      a.bindQueue().add({ name: 'a', fails: 1 });
      b.bindQueue().add({ name: 'b', fails: 1 });
      await settle();
      const entry = a.deadLetters[0] as DeadLetter<Payload>;
      expect(() => b.redrive(entry)).toThrow(TypeError);
      expect(names(a.deadLetters)).toEqual(['a']);
      expect(names(b.deadLetters)).toEqual(['b']);
    });

    it('a copy of an entry, or a made-up one, with a TypeError', async () => {
      const worker = makeWorker();
      worker.bindQueue({ name: 'q' }).add({ name: 'a', fails: 1 });
      await settle();
      const entry = worker.deadLetters[0] as DeadLetter<Payload>;
      expect(() => worker.redrive({ ...entry })).toThrow(TypeError);
      expect(() =>
        worker.redrive({ id: 'x', data: { name: 'x', fails: 0 }, source: 'q', error: new Error('x'), attempts: 1, failedAt: new Date() }),
      ).toThrow(TypeError);
      expect(() => worker.redrive(undefined as unknown as DeadLetter<Payload>)).toThrow(TypeError);
      expect(worker.deadLetters).toEqual([entry]);
      expect(starts).toHaveLength(1);
    });

    it('an entry already redriven, with a TypeError', async () => {
      const worker = makeWorker({ autoRun: false });
      worker.bindQueue().add({ name: 'a', fails: 1 });
      worker.start();
      await settle();
      const entry = worker.deadLetters[0] as DeadLetter<Payload>;
      worker.pause();
      worker.redrive(entry);
      expect(() => worker.redrive(entry)).toThrow(TypeError);
      expect(worker.numPending).toBe(1);
    });

    it('a full source, throwing QueueFullError and keeping the entry', async () => {
      const worker = makeWorker();
      const queue = worker.bindQueue({ capacity: 1 });
      queue.add({ name: 'a', fails: 1 });
      await settle();
      const entry = worker.deadLetters[0] as DeadLetter<Payload>;
      worker.pause();
      const blocker = queue.add({ name: 'blocker', fails: 0 });
      expect(() => worker.redrive(entry)).toThrow(QueueFullError);
      expect(worker.deadLetters).toEqual([entry]);
      expect(queue.length).toBe(1);
      // Once there is room again, the same entry can be redriven.
      blocker.cancel();
      const handle = worker.redrive(entry);
      worker.resume();
      await expect(handle.result()).resolves.toBe('a ok');
      expect(worker.deadLetters).toEqual([]);
    });

    it('a closed source, throwing QueueClosedError and keeping the entry', async () => {
      const worker = makeWorker();
      const queue = worker.bindQueue();
      queue.add({ name: 'a', fails: 1 });
      await settle();
      const entry = worker.deadLetters[0] as DeadLetter<Payload>;
      queue.close();
      expect(() => worker.redrive(entry)).toThrow(QueueClosedError);
      expect(worker.deadLetters).toEqual([entry]);
      expect(queue.length).toBe(0);
    });

    it('an unsubscribed subscription, throwing QueueClosedError and keeping the entry', async () => {
      const topic = new Topic<Payload>();
      const worker = makeWorker();
      const sub = worker.subscribe(topic);
      topic.publish({ name: 'm', fails: 1 });
      await settle();
      sub.unsubscribe();
      const entry = worker.deadLetters[0] as DeadLetter<Payload>;
      expect(() => worker.redrive(entry)).toThrow(QueueClosedError);
      expect(worker.deadLetters).toEqual([entry]);
    });
  });
});

describe('redrive and a handler still running', () => {
  it('a timed-out job redriven before its handler returned never has two attempts in flight', async () => {
    // The last attempt fails at its timeout and is dead-lettered at once, while the handler that
    // ignores its signal still runs. Redriving it then must not run the job a second time in
    // parallel with that handler (SPEC 6: a job never has two attempts in flight).
    let running = 0;
    let maxRunning = 0;
    let calls = 0;
    const worker = new Worker<string, string>(
      (job) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        // The first run ignores its timeout and takes 1000 ms; the redriven one is quick.
        const ms = ++calls === 1 ? 1000 : 10;
        return new Promise<string>((resolve) =>
          setTimeout(() => {
            running--;
            resolve(job.data);
          }, ms),
        );
      },
      { timeout: 100, concurrency: 2 },
    );
    const queue = worker.bindQueue();
    queue.add('slow', { id: 'slow-job' });
    await vi.advanceTimersByTimeAsync(100);
    expect(worker.deadLetters.map((entry) => entry.id)).toEqual(['slow-job']);
    expect(running).toBe(1);
    const handle = worker.redrive(worker.deadLetters[0] as DeadLetter<string>);
    // Not started yet, so it counts as pending, like any job added and not started.
    expect(handle.status).toBe('waiting');
    expect(worker.numPending).toBe(1);
    expect(queue.length).toBe(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(maxRunning).toBe(1);
    expect(handle.status).toBe('succeeded');
    expect(worker.numPending).toBe(0);
  });

  it('a redriven job held back by its running predecessor can be cancelled, and never runs', async () => {
    const starts: number[] = [];
    const worker = new Worker<string, string>(
      (job) => {
        starts.push(Date.now());
        return new Promise<string>((resolve) => setTimeout(() => resolve(job.data), 1000));
      },
      { timeout: 100, concurrency: 2 },
    );
    const queue = worker.bindQueue();
    queue.add('slow');
    await vi.advanceTimersByTimeAsync(100);
    const handle = worker.redrive(worker.deadLetters[0] as DeadLetter<string>);
    expect(handle.cancel('not after all')).toBe(true);
    expect(handle.status).toBe('cancelled');
    expect(worker.numPending).toBe(0);
    await vi.advanceTimersByTimeAsync(3000);
    expect(starts).toHaveLength(1);
    expect(worker.status).toBe('idle');
  });

  it('a redrive parked back by its running predecessor waits in its key: keyStats counts it, and keys.capacity with it', async () => {
    let calls = 0;
    const worker = new Worker<{ key: string; n: number }, number>(
      (job) => (calls++ === 0 ? new Promise<number>((resolve) => setTimeout(() => resolve(job.data.n), 1000)) : job.data.n),
      { timeout: 100, concurrency: 2 },
    );
    const queue = worker.bindQueue({ keys: { by: (data) => data.key, capacity: 1 } });
    queue.add({ key: 'a', n: 1 });
    await vi.advanceTimersByTimeAsync(100); // timed out: a dead letter while its handler still runs
    const held = worker.redrive(worker.deadLetters[0] as DeadLetter<{ key: string; n: number }>);
    expect(queue.keyStats('a')).toEqual({ waiting: 1, due: 1, delayed: 0, running: 1, paused: false });
    expect(() => queue.add({ key: 'a', n: 2 })).toThrow(QueueFullError);
    const other = queue.add({ key: 'b', n: 3 }); // another key has room
    await vi.advanceTimersByTimeAsync(5000);
    expect([held.status, other.status]).toEqual(['succeeded', 'succeeded']);
    expect(queue.keyStats('a')).toEqual({ waiting: 0, due: 0, delayed: 0, running: 0, paused: false });
  });

  it('purge() removes a redriven job held back by its running predecessor: it settles cancelled and never runs', async () => {
    const starts: string[] = [];
    const worker = new Worker<string, string>(
      (job) => {
        starts.push(job.data);
        return new Promise<string>((resolve) => setTimeout(() => resolve(job.data), 1000));
      },
      { timeout: 100, concurrency: 2 },
    );
    const cancelled: string[] = [];
    worker.on('cancelled', (job) => cancelled.push(job.id));
    const queue = worker.bindQueue();
    queue.add('slow', { id: 'slow-job' });
    await vi.advanceTimersByTimeAsync(100);
    const held = worker.redrive(worker.deadLetters[0] as DeadLetter<string>);
    const waiting = queue.add('plain', { delay: 5000 });
    expect(queue.length).toBe(2);
    expect(queue.purge()).toBe(2);
    expect([held.status, waiting.status]).toEqual(['cancelled', 'cancelled']);
    await expect(held.result()).rejects.toBeInstanceOf(CancelledError);
    expect(cancelled).toEqual(['slow-job', waiting.id]);
    expect([queue.length, worker.numPending]).toEqual([0, 0]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(starts).toEqual(['slow']);
    expect(worker.status).toBe('idle');
  });
});
