/**
 * Promotion without stalls (issue 13): delayed jobs coming due by the thousand move into their
 * due order as they start (a FIFO queue) or in bounded batches, one batch per event-loop turn (a
 * source that needs every due job), and nothing a strategy or the handler sees changes: a due
 * job still counts as due and runs in due-time order.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PROMOTE_BATCH, REFILL } from '../src/core/promotion.js';
import { Strategy, Worker, type Job } from '../src/index.js';
import { Rng } from './sim/prng.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('promotion in bounded batches', () => {
  it('a FIFO queue moves its due jobs as they start: a few ahead at most, no event-loop turn of their own, and every job still runs', async () => {
    vi.useFakeTimers();
    const n = 5 * PROMOTE_BATCH + 123;
    const hung: (() => void)[] = [];
    const worker = new Worker(() => new Promise<void>((resolve) => hung.push(resolve)), { concurrency: 2 });
    const q = worker.bindQueue();
    const handles = Array.from({ length: n }, (_, i) => q.add(i, { delay: 100 }));
    await vi.advanceTimersByTimeAsync(99);
    expect(q.delayed.length).toBe(n);

    // The wake-up pass at 100 ms: two jobs start; the due order holds at most a refill of them.
    vi.advanceTimersByTime(1);
    expect(hung).toHaveLength(2);
    expect(q.due.length).toBeLessThanOrEqual(REFILL);
    expect(q.delayed.length).toBe(n - 2 - q.due.length);
    // Not moved, but due: they count as due for the handles and for queue.length.
    expect(handles[n - 1]?.status).toBe('waiting');
    expect(q.length).toBe(n - 2);
    // Every slot is busy and nothing else is to be done: no timer, no continuation turn.
    expect(vi.getTimerCount()).toBe(0);

    // Each finish starts the next job; the due order takes a refill when it runs out, never more.
    let done = 0;
    while (done < n) {
      const batch = hung.splice(0);
      for (const resolve of batch) resolve();
      done += batch.length;
      await vi.advanceTimersByTimeAsync(0);
      expect(q.due.length).toBeLessThanOrEqual(REFILL);
      expect(q.length).toBe(n - done - hung.length);
    }
    await worker.waitUntilIdle();
    expect(worker.stats().counters.succeeded).toBe(n);
  });

  it('stats() right after the due time counts every due job as due, moved or not', async () => {
    vi.useFakeTimers();
    const n = 3 * PROMOTE_BATCH;
    const worker = new Worker(() => new Promise<void>(() => {}), { concurrency: 1 });
    const q = worker.bindQueue({ name: 'q' });
    for (let i = 0; i < n; i++) q.add(i, { delay: 100 });
    for (let i = 0; i < 5; i++) q.add(i, { delay: 1000 });
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1); // the wake-up pass has run (one job started); the continuation has not
    expect(q.delayed.length).toBeGreaterThan(PROMOTE_BATCH); // the promotion is in progress
    const source = worker.stats().sources.q;
    expect(source?.due).toBe(n - 1);
    expect(source?.delayed).toBe(5);
  });
});

describe('order with many jobs coming due at once', () => {
  /** Jobs with due times drawn from a small set (many ties), added in a shuffled order of due times. */
  function delays(count: number, seed: number): number[] {
    const rng = new Rng(seed);
    return Array.from({ length: count }, () => 10 + Math.floor(rng.next() * 40) / 4);
  }

  it('a FIFO queue runs them by due time then add order, fresh jobs after, under RoundRobin with a second queue', async () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    const worker = new Worker((job: Job<string>) => void seen.push(job.data), { strategy: Strategy.RoundRobin, autoRun: false });
    const a = worker.bindQueue({ name: 'a' });
    const b = worker.bindQueue({ name: 'b' });
    const count = 2 * PROMOTE_BATCH + 500;
    const expected: Record<string, { due: number; seq: number; data: string }[]> = { a: [], b: [] };
    let seq = 0;
    for (const [name, queue, seed] of [
      ['a', a, 1],
      ['b', b, 2],
    ] as const) {
      for (const [i, delay] of delays(count, seed).entries()) {
        const data = `${name}${i}`;
        queue.add(data, { delay });
        expected[name]?.push({ due: delay, seq: seq++, data });
      }
    }
    vi.advanceTimersByTime(100); // all due, nothing ran (not started)
    for (const [name, queue] of [
      ['a', a],
      ['b', b],
    ] as const) {
      for (let i = 0; i < 3; i++) {
        queue.add(`${name}-fresh${i}`);
        expected[name]?.push({ due: 100, seq: seq++, data: `${name}-fresh${i}` });
      }
    }
    worker.start();
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    const order = (name: string) => (expected[name] ?? []).sort((x, y) => x.due - y.due || x.seq - y.seq).map((job) => job.data);
    const as = order('a');
    const bs = order('b');
    const interleaved = as.flatMap((x, i) => [x, bs[i] as string]);
    expect(seen).toEqual(interleaved);
  });

  it('a priority queue runs them by priority number, then due time, then add order', async () => {
    vi.useFakeTimers();
    const seen: number[] = [];
    // An async handler: the jobs run over many passes, while the promotion goes on in later turns.
    const worker = new Worker(
      async (job: Job<number>) => {
        seen.push(job.data);
      },
      { concurrency: 3 },
    );
    const pq = worker.bindPriorityQueue();
    const rng = new Rng(7);
    const jobs: { priority: number; due: number; seq: number }[] = [];
    const count = 3 * PROMOTE_BATCH;
    for (let i = 0; i < count; i++) {
      const priority = Math.floor(rng.next() * 5);
      const delay = 10 + Math.floor(rng.next() * 8);
      pq.add(i, priority, { delay });
      jobs.push({ priority, due: delay, seq: i });
    }
    await vi.advanceTimersByTimeAsync(9);
    expect(seen).toEqual([]);
    // All come due within a few ms; the wake-ups come at each due time, so compare within each wave.
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    expect(seen).toHaveLength(count);
    const rank = new Map(seen.map((data, i) => [data, i]));
    for (let due = 10; due < 18; due++) {
      const wave = jobs
        .filter((job) => job.due === due)
        .sort((x, y) => x.priority - y.priority || x.seq - y.seq)
        .map((job) => job.seq);
      const ran = [...wave].sort((x, y) => (rank.get(x) as number) - (rank.get(y) as number));
      expect(ran).toEqual(wave);
    }
  });

  it('MaxLen sees the due jobs that have not moved yet in the length of their queue', async () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    const worker = new Worker((job: Job<string>) => void seen.push(job.data), { strategy: Strategy.MaxLen, autoRun: false });
    const a = worker.bindQueue({ name: 'a' });
    const b = worker.bindQueue({ name: 'b' });
    const inA = 2 * PROMOTE_BATCH;
    const inB = PROMOTE_BATCH + 100;
    for (let i = 0; i < inA; i++) a.add(`a${i}`, { delay: 5 });
    for (let i = 0; i < inB; i++) b.add(`b${i}`);
    vi.advanceTimersByTime(10);
    worker.start();
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    // The reference: always the longer queue, the first in the list on a tie.
    const expected: string[] = [];
    let la = inA;
    let lb = inB;
    while (la + lb > 0) {
      if (la >= lb && la > 0) expected.push(`a${inA - la--}`);
      else expected.push(`b${inB - lb--}`);
    }
    expect(seen).toEqual(expected);
  });

  it('a job cancelled while the promotion is in progress never runs, and the order of the rest holds', async () => {
    vi.useFakeTimers();
    const seen: number[] = [];
    const worker = new Worker(
      async (job: Job<number>) => {
        seen.push(job.data);
      },
      { concurrency: 2 },
    );
    const q = worker.bindQueue();
    const count = 2 * PROMOTE_BATCH;
    const handles = Array.from({ length: count }, (_, i) => q.add(i, { delay: 20 }));
    vi.advanceTimersByTime(20);
    expect(q.delayed.length).toBeGreaterThan(0);
    // Jobs 0 and 1 run; cancel every third job after them, moved or not, the last due one included.
    const cancelled = new Set<number>([count - 1]);
    for (let i = 3; i < count; i += 3) cancelled.add(i);
    for (const i of cancelled) expect(handles[i]?.cancel()).toBe(true);
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    expect(seen).toEqual(Array.from({ length: count }, (_, i) => i).filter((i) => !cancelled.has(i)));
    for (const i of cancelled) expect(handles[i]?.status).toBe('cancelled');
  });
});
