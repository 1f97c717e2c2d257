/**
 * Delays, runAt, rate limits and per-source caps must wake the worker by themselves. Every test
 * here runs on fake timers (which also fake Date.now, the clock qmux reads): nothing sleeps.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Strategy, Worker, type Job } from '../src/index.js';

const T0 = Date.UTC(2030, 0, 1);

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

/** A handler that records (data, ms since T0) at each start and completes at once. */
function startLog<T>() {
  const starts: [T, number][] = [];
  const handler = (job: Job<T>): void => void starts.push([job.data, Date.now() - T0]);
  return { starts, handler };
}

/** A handler that records each start and finishes `ms` later (fake time). */
function slowLog<T>(ms: number) {
  const starts: [T, number][] = [];
  const handler = (job: Job<T>): Promise<void> => {
    starts.push([job.data, Date.now() - T0]);
    return new Promise((resolve) => setTimeout(resolve, ms));
  };
  return { starts, handler };
}

describe('delayed jobs', () => {
  it('a job with delay runs by itself when due, not before', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    const q = worker.bindQueue();
    const handle = q.add('later', { delay: 100 });
    await vi.advanceTimersByTimeAsync(99);
    expect(starts).toEqual([]);
    expect(handle.status).toBe('delayed');
    expect(worker.status).toBe('running');
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([['later', 100]]);
    expect(handle.status).toBe('succeeded');
    expect(worker.status).toBe('idle');
  });

  it('runAt accepts a Date or epoch ms; a time in the past means due now', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    const q = worker.bindQueue();
    q.add('date', { runAt: new Date(T0 + 50) });
    q.add('epoch', { runAt: T0 + 30 });
    q.add('past', { runAt: T0 - 10_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([['past', 0]]);
    await vi.advanceTimersByTimeAsync(100);
    expect(starts).toEqual([
      ['past', 0],
      ['epoch', 30],
      ['date', 50],
    ]);
  });

  it('a delay of 0 is due at once', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    const handle = worker.bindQueue().add('now', { delay: 0 });
    expect(handle.status).toBe('waiting');
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([['now', 0]]);
  });

  it('delayed jobs join their queue’s order by due time', async () => {
    const slow = slowLog<string>(100);
    const worker = new Worker(slow.handler);
    const q = worker.bindQueue();
    q.add('first'); // runs 0..100, so everything below is due by the time the slot frees
    q.add('due-at-60', { delay: 60 });
    q.add('due-at-20', { delay: 20 });
    await vi.advanceTimersByTimeAsync(40);
    q.add('added-at-40');
    await vi.advanceTimersByTimeAsync(1000);
    expect(slow.starts.map(([data]) => data)).toEqual(['first', 'due-at-20', 'added-at-40', 'due-at-60']);
  });

  it('counts a delayed job as waiting: numPending and waitUntilIdle wait for it', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    worker.bindQueue().add('x', { delay: 500 });
    expect(worker.numPending).toBe(1);
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    await vi.advanceTimersByTimeAsync(499);
    expect(idle).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(idle).toBe(true);
    expect(starts).toEqual([['x', 500]]);
    expect(worker.numPending).toBe(0);
  });

  it('a delayed job that comes due while the worker is paused starts on resume', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    worker.bindQueue().add('x', { delay: 10 });
    worker.pause();
    await vi.advanceTimersByTimeAsync(100);
    expect(starts).toEqual([]);
    worker.resume();
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([['x', 100]]);
  });

  it('wakes for the earliest delayed job when a later one was armed first', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    const q = worker.bindQueue();
    q.add('far', { delay: 1000 });
    await vi.advanceTimersByTimeAsync(5);
    q.add('near', { delay: 10 });
    await vi.advanceTimersByTimeAsync(10);
    expect(starts).toEqual([['near', 15]]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(starts).toEqual([
      ['near', 15],
      ['far', 1000],
    ]);
  });

  it('holds no timer once idle', async () => {
    const { handler } = startLog<string>();
    const worker = new Worker(handler);
    const q = worker.bindQueue({ rateLimit: { limit: 1, interval: 50 } });
    q.add('a', { delay: 20 });
    q.add('b');
    q.add('c');
    await vi.advanceTimersByTimeAsync(1000);
    expect(worker.status).toBe('idle');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('holds no timer after its only delayed job is cancelled', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    const handle = worker.bindQueue().add('never', { delay: 60_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(handle.cancel()).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.status).toBe('idle');
    // An idle worker must hold nothing that keeps the process alive for another minute.
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(starts).toEqual([]);
  });

  it('holds no timer after its delayed jobs are purged', async () => {
    const { handler } = startLog<string>();
    const worker = new Worker(handler);
    const q = worker.bindQueue();
    q.add('never', { delay: 60_000 });
    q.add('never-2', { delay: 30_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(q.purge()).toBe(2);
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.status).toBe('idle');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('holds no timer while stopped or paused, even with delayed jobs waiting', async () => {
    const { starts, handler } = startLog<string>();
    const paused = new Worker(handler);
    paused.bindQueue().add('p', { delay: 1000 });
    await vi.advanceTimersByTimeAsync(0);
    paused.pause();
    const stopped = new Worker(handler);
    stopped.bindQueue().add('s', { delay: 1000 });
    await vi.advanceTimersByTimeAsync(0);
    await stopped.stop();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(2000);
    expect(starts).toEqual([]);
    stopped.start();
    paused.resume();
    await vi.advanceTimersByTimeAsync(0);
    expect(starts.map(([data]) => data).sort()).toEqual(['p', 's']);
  });
});

describe('due times further away than a timer can wait', () => {
  it('a job due in 30 days is reached in timer-sized steps: never early, and no 1 ms busy loop', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler);
    const month = 30 * 24 * 3600_000; // more than 2^31 - 1 ms, which Node's setTimeout turns into 1 ms
    const timers = vi.spyOn(globalThis, 'setTimeout');
    worker.bindQueue().add('later', { delay: month });
    await vi.advanceTimersByTimeAsync(3600_000);
    expect(starts).toEqual([]);
    expect(timers).toHaveBeenCalledTimes(1); // the first step is still pending after an hour
    await vi.advanceTimersByTimeAsync(month - 3600_000 - 1);
    expect(starts).toEqual([]);
    expect(timers).toHaveBeenCalledTimes(2); // 2^31 - 1 ms, then the rest
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([['later', month]]);
    expect(worker.status).toBe('idle');
    timers.mockRestore();
  });
});

describe('rate limits', () => {
  it('starts at most `limit` jobs in any window of `interval` ms, and wakes by itself', async () => {
    const { starts, handler } = startLog<number>();
    const worker = new Worker(handler, { concurrency: 10 });
    const q = worker.bindQueue({ rateLimit: { limit: 2, interval: 1000 } });
    for (let i = 0; i < 5; i++) q.add(i);
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([
      [0, 0],
      [1, 0],
    ]);
    await vi.advanceTimersByTimeAsync(999);
    expect(starts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toHaveLength(4);
    await vi.advanceTimersByTimeAsync(1000);
    expect(starts).toEqual([
      [0, 0],
      [1, 0],
      [2, 1000],
      [3, 1000],
      [4, 2000],
    ]);
    expect(worker.status).toBe('idle');
  });

  it('is a sliding window: no interval-long span ever holds more than `limit` starts', async () => {
    const { starts, handler } = startLog<number>();
    const worker = new Worker(handler, { concurrency: Infinity });
    const q = worker.bindQueue({ rateLimit: { limit: 3, interval: 100 } });
    q.add(0);
    await vi.advanceTimersByTimeAsync(60);
    for (let i = 1; i < 10; i++) q.add(i);
    await vi.advanceTimersByTimeAsync(1000);
    const times = starts.map(([, at]) => at);
    expect(times).toHaveLength(10);
    for (let i = 3; i < times.length; i++) {
      expect((times[i] as number) - (times[i - 3] as number)).toBeGreaterThanOrEqual(100);
    }
    // And it is not slower than the window requires.
    expect(times).toEqual([0, 60, 60, 100, 160, 160, 200, 260, 260, 300]);
  });

  it('judges each start at its own time: a synchronous handler that takes a while does not let the next start count as earlier', async () => {
    const starts: [string, number][] = [];
    const handler = (job: Job<string>): void => {
      starts.push([job.data, Date.now() - T0]);
      if (job.data === 'a1') vi.advanceTimersByTime(60); // 60 ms of synchronous work
    };
    const worker = new Worker(handler, { concurrency: 10 });
    const q = worker.bindQueue({ rateLimit: { limit: 2, interval: 100 } });
    for (const id of ['a1', 'a2', 'a3', 'a4']) q.add(id);
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([
      ['a1', 0],
      ['a2', 60],
    ]);
    // The fake clock now reads 60; at 100 an add wakes the worker. a3 may start (a1 was 100 ms
    // ago), but a4 only 100 ms after a2 actually started: at 160, not at 100, which would put
    // a2, a3 and a4 in one 100 ms window.
    await vi.advanceTimersByTimeAsync(100 - (Date.now() - T0));
    q.add('a5');
    await vi.advanceTimersByTimeAsync(500);
    expect(starts).toEqual([
      ['a1', 0],
      ['a2', 60],
      ['a3', 100],
      ['a4', 160],
      ['a5', 200],
    ]);
  });

  it('a rate-limited source is passed over while it waits: other sources use the slot', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker(handler, { strategy: Strategy.Priority, autoRun: false });
    const limited = worker.bindQueue({ name: 'limited', priority: 1, rateLimit: { limit: 1, interval: 100 } });
    const other = worker.bindQueue({ name: 'other', priority: 2 });
    limited.add('l0');
    limited.add('l1');
    other.add('o0');
    other.add('o1');
    worker.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([
      ['l0', 0],
      ['o0', 0],
      ['o1', 0],
    ]);
    await vi.advanceTimersByTimeAsync(100);
    expect(starts.at(-1)).toEqual(['l1', 100]);
  });

  it.each([1, 2])('a worker whose every slot is busy holds no 1 ms timer loop for a rate-limited job that waits (limit %i)', async (limit) => {
    // The rate window is open (limit 2) or opens at 100 ms (limit 1), but no slot is free until
    // the running job ends at 1000 ms: nothing but that end can start the next job.
    const slow = slowLog<number>(1000);
    const worker = new Worker(slow.handler, { concurrency: 1 });
    const q = worker.bindQueue({ rateLimit: { limit, interval: 100 } });
    q.add(0);
    q.add(1);
    await vi.advanceTimersByTimeAsync(0);
    const timers = vi.spyOn(globalThis, 'setTimeout');
    await vi.advanceTimersByTimeAsync(999);
    expect(timers.mock.calls.length).toBeLessThanOrEqual(1);
    timers.mockRestore();
    await vi.advanceTimersByTimeAsync(1);
    expect(slow.starts).toEqual([
      [0, 0],
      [1, 1000],
    ]);
  });

  it('counts starts, not completions: slow jobs do not stretch the window', async () => {
    const slow = slowLog<number>(250);
    const worker = new Worker(slow.handler, { concurrency: 10 });
    const q = worker.bindQueue({ rateLimit: { limit: 1, interval: 100 } });
    for (let i = 0; i < 3; i++) q.add(i);
    await vi.advanceTimersByTimeAsync(1000);
    expect(slow.starts).toEqual([
      [0, 0],
      [1, 100],
      [2, 200],
    ]);
  });
});

describe('per-source caps', () => {
  it('a source held at its own concurrency is woken when its job finishes', async () => {
    const slow = slowLog<number>(100);
    const worker = new Worker(slow.handler, { concurrency: 5 });
    const q = worker.bindQueue({ concurrency: 1 });
    for (let i = 0; i < 3; i++) q.add(i);
    await vi.advanceTimersByTimeAsync(350);
    expect(slow.starts).toEqual([
      [0, 0],
      [1, 100],
      [2, 200],
    ]);
    expect(worker.status).toBe('idle');
  });

  it('a worker at full concurrency picks up a delayed job that came due meanwhile as soon as a slot frees', async () => {
    const slow = slowLog<string>(100);
    const worker = new Worker(slow.handler, { concurrency: 1 });
    const q = worker.bindQueue();
    q.add('busy');
    q.add('due-at-10', { delay: 10 });
    await vi.advanceTimersByTimeAsync(100);
    expect(slow.starts).toEqual([
      ['busy', 0],
      ['due-at-10', 100],
    ]);
  });

  it('a capped and rate-limited source wakes for whichever limit lifts last', async () => {
    const slow = slowLog<number>(30);
    const worker = new Worker(slow.handler, { concurrency: 5 });
    const q = worker.bindQueue({ concurrency: 1, rateLimit: { limit: 1, interval: 100 } });
    for (let i = 0; i < 3; i++) q.add(i);
    await vi.advanceTimersByTimeAsync(500);
    expect(slow.starts).toEqual([
      [0, 0],
      [1, 100],
      [2, 200],
    ]);
  });
});
