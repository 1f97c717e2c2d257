/**
 * The hot path's shortcuts (issue 13): each must leave behaviour exactly as it was. What they
 * skip is checked here where it can be seen from outside; everything else they touch is covered
 * by the rest of the suite, which runs through them.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Worker } from '../src/index.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'Date', 'performance'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('an emit nobody hears is skipped', () => {
  it("no emit call for 'active' and 'completed' while nobody listens; a listener added later hears both, and removing it skips them again", async () => {
    const worker = new Worker((job) => job.data);
    const q = worker.bindQueue();
    const emit = vi.spyOn(worker, 'emit');
    q.add('unheard');
    await worker.waitUntilIdle();
    const perJob = (name: string) => emit.mock.calls.filter(([event]) => event === name).length;
    expect(perJob('active')).toBe(0);
    expect(perJob('completed')).toBe(0);

    const heard: string[] = [];
    const onActive = (job: { data: unknown }) => heard.push(`active ${String(job.data)}`);
    const onCompleted = (job: { data: unknown }, result: unknown) => heard.push(`completed ${String(job.data)} -> ${String(result)}`);
    worker.on('active', onActive).on('completed', onCompleted);
    q.add('heard');
    await worker.waitUntilIdle();
    expect(heard).toEqual(['active heard', 'completed heard -> heard']);

    worker.off('active', onActive).off('completed', onCompleted);
    emit.mockClear();
    q.add('unheard again');
    await worker.waitUntilIdle();
    expect(perJob('active') + perJob('completed')).toBe(0);
    expect(heard).toHaveLength(2);
  });

  it("a listener on another event ('error') does not stop 'active' and 'completed' from reaching theirs", async () => {
    const worker = new Worker((job) => job.data);
    const q = worker.bindQueue();
    worker.on('error', () => undefined);
    const heard: unknown[] = [];
    worker.on('completed', (_job, result) => heard.push(result));
    q.add(1);
    q.add(2);
    await worker.waitUntilIdle();
    expect(heard).toEqual([1, 2]);
  });
});

describe('the clock is read once per job while a delayed job waits', () => {
  it('a pass does not read it again after a start that took the last free slot', async () => {
    const n = 1000;
    const worker = new Worker(async (_job) => undefined, { concurrency: 4 });
    const q = worker.bindQueue();
    const held = q.add('later', { delay: 3_600_000 });
    for (let i = 0; i < n; i++) q.add(i);
    const readings = vi.spyOn(performance, 'now');
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.stats().counters.succeeded).toBe(n);
    expect(q.delayed.length).toBe(1); // the held job still waits
    // One reading per pass, that is per job (a timed job takes two more for its timing: every
    // job up to the budget of a second, then 1 in 64); reading after every start as well made it
    // two per job.
    const calls = readings.mock.calls.length;
    const timed = worker.stats().runTime.count;
    expect(timed).toBeLessThan(n / 2);
    expect(calls - 2 * timed).toBeGreaterThanOrEqual(n);
    expect(calls - 2 * timed).toBeLessThan(1.1 * n);
    readings.mockRestore();
    held.cancel();
    await worker.waitUntilIdle();
  });
});
