/**
 * Promotion without stalls (issue 13): delayed jobs coming due by the thousand move into their
 * due order as they start (a FIFO queue) or in bounded batches, one batch per event-loop turn (a
 * source that needs every due job), and nothing a strategy or the handler sees changes: a due
 * job still counts as due and runs in due-time order.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PROMOTE_STEP, PROMOTE_SLICE_MS, REFILL } from '../src/core/promotion.js';
import { type PriorityQueue, type Queue, Strategy, Worker, type Job, type SourceView } from '../src/index.js';
import { Rng } from './sim/prng.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('promotion in bounded batches', () => {
  it('a FIFO queue moves its due jobs as they start: a few ahead at most, no event-loop turn of their own, and every job still runs', async () => {
    vi.useFakeTimers();
    const n = 5 * PROMOTE_STEP + 123;
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
    const n = 3 * PROMOTE_STEP;
    const worker = new Worker(() => new Promise<void>(() => {}), { concurrency: 1 });
    const q = worker.bindQueue({ name: 'q' });
    for (let i = 0; i < n; i++) q.add(i, { delay: 100 });
    for (let i = 0; i < 5; i++) q.add(i, { delay: 1000 });
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1); // the wake-up pass has run (one job started); the continuation has not
    expect(q.delayed.length).toBeGreaterThan(PROMOTE_STEP); // the promotion is in progress
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
    const count = 2 * PROMOTE_STEP + 500;
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
    const count = 3 * PROMOTE_STEP;
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
    const inA = 2 * PROMOTE_STEP;
    const inB = PROMOTE_STEP + 100;
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
    const count = 2 * PROMOTE_STEP;
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

describe('a burst coming due in a source that needs every due job', () => {
  /**
   * Adds `n` jobs (`p0`, `p1`, ...) to `pq` at priority 1, due together 100 ms later; runs the
   * wake-up pass at their due time, then adds job `f` to `other` and lets its pass run.
   */
  async function burstThenOther(pq: PriorityQueue<string>, other: Queue<string>, n: number): Promise<void> {
    for (let i = 0; i < n; i++) void pq.add(`p${i}`, 1, { delay: 100 });
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1);
    void other.add('f');
    await Promise.resolve();
    await Promise.resolve();
  }

  /**
   * Steps the worker's event-loop turns one timer at a time after the wake-up pass, until a job
   * has started, and checks that the `n` due jobs the source held moved a bounded batch per turn
   * (`held` reads what it still holds) over several turns, none of them started before.
   */
  async function expectOrderedInTurns(n: number, held: () => number, started: () => number): Promise<void> {
    const left: number[] = [];
    for (let turn = 0; started() === 0; turn++) {
      if (turn > 10_000) throw new Error('no job ever started');
      left.push(held());
      vi.advanceTimersToNextTimer();
      await Promise.resolve();
    }
    // No turn did the whole burst: the wake-up pass and each later turn moved a batch or two.
    expect(left[0]).toBeGreaterThanOrEqual(n - 3 * PROMOTE_STEP);
    for (let i = 1; i < left.length; i++) expect((left[i - 1] as number) - (left[i] as number)).toBeLessThanOrEqual(3 * PROMOTE_STEP);
    expect(left.length).toBeGreaterThan(3);
  }

  it('a priority queue orders a burst in bounded batches, one per turn, and starts nothing before its order is complete', async () => {
    vi.useFakeTimers();
    const n = 10 * PROMOTE_STEP;
    const seen: number[] = [];
    const worker = new Worker((job: Job<number>) => void seen.push(job.data), { concurrency: 4 });
    const pq = worker.bindPriorityQueue();
    const rng = new Rng(11);
    const jobs: { priority: number; seq: number }[] = [];
    for (let i = 0; i < n; i++) {
      const priority = rng.int(0, 9);
      pq.add(i, priority, { delay: 100 });
      jobs.push({ priority, seq: i });
    }
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1); // the wake-up pass
    // Every job counts as due at once, moved or not.
    expect(pq.length).toBe(n);
    expect(worker.stats().sources['priority-queue-1']?.due).toBe(n);
    await expectOrderedInTurns(
      n,
      () => pq.delayed.length,
      () => seen.length,
    );
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    // The order is the one of every job moved at once: priority number, then add order.
    expect(seen).toEqual(jobs.sort((x, y) => x.priority - y.priority || x.seq - y.seq).map((job) => job.seq));
  });

  it('a keyed queue does the same, and then takes turns between its keys', async () => {
    vi.useFakeTimers();
    const n = 10 * PROMOTE_STEP;
    const seen: number[] = [];
    const worker = new Worker((job: Job<number>) => void seen.push(job.data), { concurrency: 2 });
    const q = worker.bindQueue({ keys: { by: (i: number) => i % 3 } });
    for (let i = 0; i < n; i++) q.add(i, { delay: 100 });
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1);
    expect(q.length).toBe(n);
    // A key's figures count its due jobs as due too, moved or not.
    const ofKey0 = Math.ceil(n / 3);
    expect(q.keyStats(0)).toEqual({ waiting: ofKey0, due: ofKey0, delayed: 0, running: 0, paused: false });
    await expectOrderedInTurns(
      n,
      () => q.delayed.length,
      () => seen.length,
    );
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    // Keys 0, 1, 2 in turn, each key's jobs in add order: here that is add order itself.
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it('a source at its own concurrency cannot give a job, so its burst holds up no other source', async () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    const hung: (() => void)[] = [];
    const worker = new Worker(
      (job: Job<string>) => {
        seen.push(job.data);
        if (job.data === 'p-first') return new Promise<void>((resolve) => hung.push(resolve));
      },
      { concurrency: 4 },
    );
    const pq = worker.bindPriorityQueue({ concurrency: 1 });
    const fifo = worker.bindQueue();
    pq.add('p-first', 0);
    await vi.advanceTimersByTimeAsync(0); // p-first runs and holds the priority queue's one slot
    await burstThenOther(pq, fifo, 5 * PROMOTE_STEP);
    // The FIFO queue's job started at once, without waiting for the priority queue's order.
    expect(seen).toEqual(['p-first', 'f']);
    (hung[0] as () => void)();
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    expect(seen).toHaveLength(2 + 5 * PROMOTE_STEP);
  });

  it("a strategy reading a priority queue's length while its burst waits counts the burst without moving it", async () => {
    vi.useFakeTimers();
    const lengths: number[] = [];
    const readsAll = {
      name: 'reads every length',
      create: () => ({
        pick(views: readonly SourceView[]) {
          for (const view of views) lengths.push(view.length);
          return views.find((view) => view.eligible) as SourceView;
        },
      }),
    };
    const hung: (() => void)[] = [];
    const ran: number[] = [];
    const worker = new Worker(
      (job: Job<number>) => {
        ran.push(job.data);
        if (job.data === -1) return new Promise<void>((resolve) => hung.push(resolve));
      },
      { concurrency: 4, strategy: readsAll },
    );
    const pq = worker.bindPriorityQueue({ concurrency: 1 });
    const fifo = worker.bindQueue();
    pq.add(-1, 0);
    await vi.advanceTimersByTimeAsync(0); // holds the priority queue's one slot
    const n = 5 * PROMOTE_STEP;
    for (let i = 0; i < n; i++) pq.add(i, 1, { delay: 100 });
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1);
    lengths.length = 0;
    fifo.add(0);
    await Promise.resolve();
    await Promise.resolve();
    expect(ran).toEqual([-1, 0]);
    expect(lengths).toEqual([n, 1]);
    // Counted where they wait: most of the burst has not moved.
    expect(pq.delayed.length).toBeGreaterThan(n - 3 * PROMOTE_STEP);
    (hung[0] as () => void)();
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    expect(ran).toEqual([-1, 0, ...Array.from({ length: n }, (_, i) => i)]);
  });

  it('many handlers finishing in one turn still move a bounded batch in it, not one each', async () => {
    vi.useFakeTimers();
    const hung: (() => void)[] = [];
    const running = 200;
    const worker = new Worker(
      (job: Job<number>) => {
        if (job.data < 0) return new Promise<void>((resolve) => hung.push(resolve));
      },
      { concurrency: running + 1 },
    );
    const fifo = worker.bindQueue();
    const pq = worker.bindPriorityQueue();
    for (let i = 0; i < running; i++) fifo.add(-1 - i);
    await vi.advanceTimersByTimeAsync(0);
    expect(hung).toHaveLength(running);
    const n = 300 * PROMOTE_STEP;
    for (let i = 0; i < n; i++) pq.add(i, 1, { delay: 100 });
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1); // the wake-up pass
    const held = pq.delayed.length;
    // Every running handler settles in this turn: each settle runs a pass of its own.
    for (const resolve of hung) resolve();
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(held - pq.delayed.length).toBeLessThanOrEqual(2 * PROMOTE_STEP);
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    expect(worker.stats().counters.succeeded).toBe(n + running);
  });

  it('a turn whose moves are slow stops its batch once they have taken PROMOTE_SLICE_MS, and the order still holds', async () => {
    vi.useFakeTimers();
    const n = 4 * PROMOTE_STEP;
    const seen: number[] = [];
    const worker = new Worker((job: Job<number>) => void seen.push(job.data), { concurrency: 2 });
    const pq = worker.bindPriorityQueue();
    for (let i = 0; i < n; i++) pq.add(i, n - i, { delay: 100 }); // the last added runs first
    await vi.advanceTimersByTimeAsync(99);
    // From the wake-up pass on, every reading of the clock finds it a millisecond later: moves
    // as slow as cold code on a loaded machine. (The fake timers' own time does not move.)
    const fakeNow = performance.now.bind(performance);
    let drift = 0;
    const slow = vi.spyOn(performance, 'now').mockImplementation(() => fakeNow() + ++drift);
    const left = [pq.delayed.length];
    vi.advanceTimersByTime(1); // the wake-up pass
    while (seen.length === 0 && left.length < 1000) {
      left.push(pq.delayed.length);
      vi.advanceTimersToNextTimer();
      await Promise.resolve();
    }
    slow.mockRestore();
    // The clock is read at a turn's first move (which starts its time) and every 64 moves after:
    // a millisecond a reading, the slice of PROMOTE_SLICE_MS is spent at the reading that many
    // after the first, one move past 64 times as many, and the starts of the turn move none on
    // top (where the count alone would let a turn move 2 batches).
    const perTurn = left.slice(1).map((held, i) => (left[i] as number) - held);
    expect(Math.max(...perTurn)).toBeGreaterThan(0);
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(PROMOTE_SLICE_MS * 64 + 1);
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => n - 1 - i));
  });

  it('a source whose rate window is closed cannot give a job either: its burst holds up no other source', async () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    const worker = new Worker((job: Job<string>) => void seen.push(job.data), { concurrency: 4 });
    const pq = worker.bindPriorityQueue({ rateLimit: { limit: 1, interval: 10_000 } });
    const fifo = worker.bindQueue();
    pq.add('p-first', 0);
    await vi.advanceTimersByTimeAsync(0); // the window's one start is used
    await burstThenOther(pq, fifo, 5 * PROMOTE_STEP);
    expect(seen).toEqual(['p-first', 'f']);
    // When the window opens, the burst is put in order and its jobs run, one per window.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(seen).toEqual(['p-first', 'f', 'p0']);
    worker.stop();
  });

  it("purge({ key }) while a burst is held leaves the other keys' due jobs counted as due", async () => {
    vi.useFakeTimers();
    const worker = new Worker((_job: Job<number>) => new Promise<void>(() => {}), { concurrency: 1 });
    const q = worker.bindQueue({ keys: { by: (i: number) => i % 2 } });
    const n = 10 * PROMOTE_STEP;
    for (let i = 0; i < n; i++) q.add(i, { delay: 100 });
    await vi.advanceTimersByTimeAsync(99);
    vi.advanceTimersByTime(1);
    const half = n / 2;
    expect(q.keyStats(0)).toMatchObject({ due: half, delayed: 0 });
    expect(q.purge({ key: 1 })).toBe(half);
    expect(q.keyStats(0)).toMatchObject({ due: half, delayed: 0 });
    expect(q.keyStats(1)).toMatchObject({ waiting: 0 });
  });
});
