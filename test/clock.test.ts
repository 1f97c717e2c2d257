/**
 * Time (SPEC 2): every duration runs on a monotonic clock, so stepping the wall clock neither
 * stalls nor hastens anything, and a job that has come due is never left without a pass. Fake
 * timers fake both clocks; `vi.setSystemTime` steps the wall clock alone, as NTP or a resumed
 * VM would.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WallClockOffset } from '../src/shell/clock.js';
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

  it('jobs given one runAt run in add order, though Date.now() rounds a different fraction away at each add', async () => {
    const { starts, handler } = startLog<number>();
    const q = new Worker(handler).bindQueue();
    // Both clocks advance 0.3 ms between two adds; Date.now() shows whole milliseconds, so the
    // offset read between them jitters by up to a millisecond from one add to the next.
    const wall = Date.now();
    const monotonic = performance.now();
    let t = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => Math.floor(wall + t));
    vi.spyOn(performance, 'now').mockImplementation(() => monotonic + t);
    for (let i = 0; i < 20; i++) {
      q.add(i, { runAt: T0 + 1000 });
      t += 0.3;
    }
    vi.restoreAllMocks();
    await vi.advanceTimersByTimeAsync(1003);
    expect(starts.map(([data]) => data)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    // None ran before its runAt.
    for (const [, at] of starts) expect(at).toBeGreaterThanOrEqual(1000);
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

/** How far the monotonic clock has been moved ahead by {@link busyFor} in this test. */
let skew = 0;

/**
 * Lets `ms` of monotonic time pass without running any timer, as a busy event loop (or a
 * synchronous listener that computes for a while) does: the worker's timers stay where they were
 * armed. One spy per test, moved further on each call (a spy wrapping the spy would call itself).
 */
function busyFor(ms: number): void {
  if (!vi.isMockFunction(performance.now)) {
    const real = performance.now.bind(performance);
    skew = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => real() + skew);
  }
  skew += ms;
  vi.setSystemTime(Date.now() + ms);
}

describe('a job that has come due', () => {
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

describe('converting a runAt to the monotonic clock (WallClockOffset)', () => {
  /**
   * Two consistent clocks on one real time `t` (ms), which advances by `gaps()` ms at each read
   * of the monotonic clock (time runs between reads, a garbage collection now and then);
   * `Date.now()` rounds the wall clock down. The true offset between them is `P - W`.
   */
  function clocks(phase: number, gaps: () => number) {
    const W = T0;
    const P = 5000;
    let t = phase;
    vi.spyOn(Date, 'now').mockImplementation(() => Math.floor(W + t));
    const clock = {
      now: () => {
        t += gaps();
        return P + t;
      },
    };
    return { clock, trueOffset: P - W };
  }

  it('never puts a job before its runAt, nor more than a millisecond after, whatever Date.now() rounds away or runs between the reads', () => {
    for (const phase of [0, 0.25, 0.5, 0.75, 0.999]) {
      for (const step of [0.001, 0.3, 0.9]) {
        let n = 0;
        // Every 7th read comes after a 5 ms pause (a garbage collection between two reads).
        const { clock, trueOffset } = clocks(phase, () => (++n % 7 === 0 ? 5 : step));
        const offset = new WallClockOffset();
        for (let i = 0; i < 50; i++) {
          const at = offset.at(T0 + 1000, clock);
          expect(at).toBeGreaterThanOrEqual(T0 + 1000 + trueOffset);
          expect(at).toBeLessThan(T0 + 1000 + trueOffset + 1 + step);
        }
      }
    }
  });

  it('converts one runAt to one monotonic time across a burst of adds', () => {
    const { clock } = clocks(0.5, () => 0.07);
    const offset = new WallClockOffset();
    const first = offset.at(T0 + 1000, clock);
    const later = Array.from({ length: 200 }, () => offset.at(T0 + 1000, clock));
    // The first reading may be below the largest of the next millisecond's; after it, one value.
    const settled = later.slice(20);
    expect(new Set(settled).size).toBe(1);
    expect(settled[0]).toBeGreaterThanOrEqual(first);
  });

  it('follows a step of the wall clock: back at once, forward once past the slack', () => {
    let wallStep = 0;
    let t = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => Math.floor(T0 + t + wallStep));
    const clock = { now: () => 5000 + (t += 0.1) };
    const offset = new WallClockOffset();
    const before = offset.at(T0 + 1000, clock);
    wallStep = -60_000; // the wall clock steps back a minute: the runAt is a minute further off
    expect(offset.at(T0 + 1000, clock)).toBeGreaterThanOrEqual(before + 60_000);
    wallStep = 0; // and forward again
    expect(offset.at(T0 + 1000, clock)).toBeLessThan(before + 1);
  });
});

describe('a start after user code in the same pass (issue 33, defect 4)', () => {
  /** A handler that never settles and ignores its signal: its timeout fails it, its slot stays taken. */
  const hangs = (): Promise<never> => new Promise(() => {});

  for (const slow of ['a failed listener', 'an abort listener', 'a retry hook'] as const) {
    it(`times a job out a whole timeout after its start, though ${slow} took 30 ms before it`, async () => {
      const t0 = performance.now();
      let startedAt = Number.NaN;
      let abortedAt = Number.NaN;
      const worker = new Worker<string, void>(
        (job) => {
          if (job.data === 'hangs') {
            if (slow === 'an abort listener') job.signal.addEventListener('abort', () => busyFor(30));
            return hangs();
          }
          startedAt = performance.now() - t0;
          job.signal.addEventListener('abort', () => void (abortedAt = performance.now() - t0));
          return hangs();
        },
        { concurrency: 2 },
      );
      if (slow === 'a failed listener') worker.on('failed', () => busyFor(30));
      const q = worker.bindQueue();
      const retryIf = (): boolean => {
        busyFor(30);
        return false;
      };
      q.add('hangs', slow === 'a retry hook' ? { timeout: 10, retry: { attempts: 2, retryIf } } : { timeout: 10 });
      q.add('timed', { delay: 10, timeout: 40 });
      await vi.advanceTimersByTimeAsync(10); // 'hangs' times out, 'timed' comes due, in one pass
      expect(startedAt).toBe(40);
      await vi.advanceTimersByTimeAsync(60);
      expect(abortedAt - startedAt).toBeGreaterThanOrEqual(40);
      expect(abortedAt).toBe(80);
    });
  }

  for (const keyed of [false, true]) {
    it(`keeps ${keyed ? 'a key’s' : 'a'} rate window of 50 ms, though a failed listener took 30 ms before a start`, async () => {
      const { starts, handler } = startLog<string>();
      const worker = new Worker<string, void>((job) => (job.data === 'hangs' ? hangs() : handler(job)), { concurrency: 3 });
      worker.on('failed', () => busyFor(30));
      worker.bindQueue().add('hangs', { timeout: 50 });
      const rate = { limit: 1, interval: 50 };
      const add = keyed
        ? (
            (queue) => (name: string) =>
              void queue.add(name)
          )(worker.bindQueue({ keys: { by: () => 'k', rateLimit: rate } }))
        : (
            (queue) => (name: string) =>
              void queue.add(name)
          )(worker.bindQueue({ rateLimit: rate }));
      for (const name of ['a', 'b', 'c']) add(name);
      await vi.advanceTimersByTimeAsync(300);
      const times = starts.map(([, at]) => at);
      expect(starts.map(([data]) => data)).toEqual(['a', 'b', 'c']);
      // 'b' starts at 80 (the pass at 50 timed 'hangs' out first): its window runs from there.
      expect(times).toEqual([0, 80, 130]);
    });
  }
});
