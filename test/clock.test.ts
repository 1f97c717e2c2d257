/**
 * Time (SPEC 2): every duration runs on a monotonic clock, so stepping the wall clock neither
 * stalls nor hastens anything, and a job that has come due is never left without a pass. Fake
 * timers fake both clocks; `vi.setSystemTime` steps the wall clock alone, as NTP or a resumed
 * VM would.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Registry, Worker, type Job } from '../src/index.js';

const T0 = Date.UTC(2030, 0, 1);

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** A handler that records (data, monotonic ms since the test began) at each start. */
function startLog<T>() {
  const t0 = performance.now();
  const starts: [T, number][] = [];
  const handler = (job: Job<T>): void => void starts.push([job.data, performance.now() - t0]);
  return { starts, handler };
}

describe('a wall-clock step', () => {
  it('backwards does not stall a delay', async () => {
    const { starts, handler } = startLog<string>();
    const q = new Worker(handler).bindQueue();
    q.add('x', { delay: 50 });
    vi.setSystemTime(T0 - 10_000);
    await vi.advanceTimersByTimeAsync(50);
    expect(starts).toEqual([['x', 50]]);
  });

  it('forwards does not hasten a delay', async () => {
    const { starts, handler } = startLog<string>();
    const q = new Worker(handler).bindQueue();
    q.add('x', { delay: 50 });
    vi.setSystemTime(T0 + 10_000);
    await vi.advanceTimersByTimeAsync(49);
    expect(starts).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([['x', 50]]);
  });

  it('backwards does not stall a retry backoff', async () => {
    const starts: number[] = [];
    const t0 = performance.now();
    const worker = new Worker(
      () => {
        starts.push(performance.now() - t0);
        if (starts.length === 1) throw new Error('first attempt fails');
      },
      { retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } },
    );
    worker.bindQueue().add('x');
    await vi.advanceTimersByTimeAsync(0);
    vi.setSystemTime(T0 - 60_000);
    await vi.advanceTimersByTimeAsync(100);
    expect(starts).toEqual([0, 100]);
  });

  it('backwards does not stall a rate window', async () => {
    const { starts, handler } = startLog<string>();
    const q = new Worker(handler, { concurrency: 4 }).bindQueue({ rateLimit: { limit: 1, interval: 100 } });
    q.add('a');
    q.add('b');
    await vi.advanceTimersByTimeAsync(0);
    vi.setSystemTime(T0 - 60_000);
    await vi.advanceTimersByTimeAsync(100);
    expect(starts).toEqual([
      ['a', 0],
      ['b', 100],
    ]);
  });

  it('after a runAt was added, it runs when the converted time comes, not at the new wall-clock reading', async () => {
    const { starts, handler } = startLog<string>();
    const q = new Worker(handler).bindQueue();
    q.add('x', { runAt: new Date(T0 + 1000) });
    vi.setSystemTime(T0 + 5000); // the wall clock jumps past runAt: the job is not due yet
    await vi.advanceTimersByTimeAsync(999);
    expect(starts).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([['x', 1000]]);
  });

  it('a runAt is never brought forward by the millisecond that Date.now() rounds away', async () => {
    const { starts, handler } = startLog<string>();
    const q = new Worker(handler).bindQueue();
    // Time runs between two clock readings: once the monotonic clock has been read, the wall
    // clock shows the next millisecond (as when a millisecond boundary falls between the two).
    const wall = Date.now.bind(Date);
    const monotonic = performance.now.bind(performance);
    let monotonicRead = false;
    vi.spyOn(performance, 'now').mockImplementation(() => {
      monotonicRead = true;
      return monotonic();
    });
    vi.spyOn(Date, 'now').mockImplementation(() => wall() + (monotonicRead ? 1 : 0));
    q.add('x', { runAt: new Date(T0 + 1000) });
    vi.restoreAllMocks();
    await vi.advanceTimersByTimeAsync(999);
    expect(starts).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([['x', 1000]]);
  });

  it('a job timeout still fires on time after the wall clock steps back', async () => {
    const worker = new Worker(() => new Promise(() => {}), { timeout: 100 });
    const handle = worker.bindQueue().add('hangs');
    await vi.advanceTimersByTimeAsync(0);
    vi.setSystemTime(T0 - 60_000);
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.status).toBe('failed');
  });
});

describe('a job that has come due', () => {
  /**
   * Lets monotonic time pass without running any timer, as a busy event loop does: the
   * worker's wake-up timer is then late, and whatever runs first sees the job due.
   */
  function busyFor(ms: number): void {
    const now = performance.now.bind(performance);
    const skewed = (): number => now() + ms;
    vi.spyOn(performance, 'now').mockImplementation(skewed);
    vi.setSystemTime(Date.now() + ms);
  }

  for (const [what, look] of [
    ['worker.stats()', (worker: Worker<string, void>) => void worker.stats()],
    ['registry.stats()', (worker: Worker<string, void>) => void new Registry().add(worker).stats()],
  ] as const) {
    it(`runs after ${what} saw it due and the only other delayed job was cancelled`, async () => {
      const { starts, handler } = startLog<string>();
      const worker = new Worker<string, void>(handler);
      const q = worker.bindQueue();
      q.add('X', { delay: 50 });
      const y = q.add('Y', { delay: 10_000 });
      await vi.advanceTimersByTimeAsync(0);
      busyFor(60); // X is due; its timer has not fired yet
      look(worker);
      y.cancel();
      await vi.advanceTimersByTimeAsync(0);
      expect(starts.map(([data]) => data)).toEqual(['X']);
      await expect(worker.waitUntilIdle()).resolves.toBeUndefined();
    });
  }

  it('runs after a purge took the other delayed job while it was due', async () => {
    const { starts, handler } = startLog<string>();
    const worker = new Worker<string, void>(handler);
    const q = worker.bindQueue();
    const other = worker.bindQueue();
    q.add('X', { delay: 50 });
    other.add('Y', { delay: 10_000 });
    await vi.advanceTimersByTimeAsync(0);
    busyFor(60);
    worker.stats();
    other.purge();
    await vi.advanceTimersByTimeAsync(0);
    expect(starts.map(([data]) => data)).toEqual(['X']);
  });
});
