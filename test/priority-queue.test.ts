import { afterEach, describe, expect, it, vi } from 'vitest';
import { Worker, type Job } from '../src/index.js';

/** A worker (not started) with one priority queue, and the data its handler saw, in order. */
function setup<T>() {
  const taken: T[] = [];
  const worker = new Worker((job: Job<T>) => void taken.push(job.data), { autoRun: false });
  const pq = worker.bindPriorityQueue();
  return { taken, worker, pq };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('PriorityQueue', () => {
  it('runs add(i, i % 2) for i = 0..9 as 0 2 4 6 8 1 3 5 7 9', async () => {
    const { taken, worker, pq } = setup<number>();
    for (let i = 0; i < 10; i++) pq.add(i, i % 2);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual([0, 2, 4, 6, 8, 1, 3, 5, 7, 9]);
  });

  it('is FIFO among equal priority numbers, also for many jobs', async () => {
    const { taken, worker, pq } = setup<number>();
    for (let i = 0; i < 200; i++) pq.add(i, 3);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it('runs a lower number first, negative and fractional numbers included', async () => {
    const { taken, worker, pq } = setup<string>();
    pq.add('ten', 10);
    pq.add('minus-one', -1);
    pq.add('half', 0.5);
    pq.add('zero', 0);
    pq.add('minus-one-b', -1);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(['minus-one', 'minus-one-b', 'zero', 'half', 'ten']);
  });

  it('a redriven job keeps its priority number, 0 and others alike', async () => {
    // Jobs of priority 0 and of other numbers are records of two kinds; a redrive makes a new
    // record from the dead one, which must keep its number. (A retry reuses its record.)
    const taken: string[] = [];
    const dead = new Worker((job: Job<string>) => {
      taken.push(job.data);
      if (job.attempt === 1 && (job.data === 'three' || job.data === 'zero')) throw new Error('dead');
    });
    const dq = dead.bindPriorityQueue();
    dq.add('three', 3);
    dq.add('zero', 0);
    await dead.waitUntilIdle();
    expect(dead.deadLetters.map((entry) => entry.data)).toEqual(['zero', 'three']);
    dead.pause();
    taken.length = 0;
    for (const [data, priority] of [
      ['four', 4],
      ['two', 2],
      ['one', 1],
      ['minus-one', -1],
    ] as const)
      dq.add(data, priority);
    for (const entry of dead.deadLetters) dead.redrive(entry);
    dead.resume();
    await dead.waitUntilIdle();
    expect(taken).toEqual(['minus-one', 'zero', 'one', 'two', 'three', 'four']);
  });

  it('orders a job added while others wait by its priority number', async () => {
    const taken: string[] = [];
    let pq!: ReturnType<Worker<string, void>['bindPriorityQueue']>;
    const worker = new Worker(
      (job: Job<string>) => {
        taken.push(job.data);
        if (job.data === 'first') pq.add('urgent', 0); // arrives while 'mid' and 'late' wait
      },
      { autoRun: false },
    );
    pq = worker.bindPriorityQueue();
    pq.add('first', 0);
    pq.add('late', 9);
    pq.add('mid', 5);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(['first', 'urgent', 'mid', 'late']);
  });

  it('within equal priority, an earlier due time goes before add order', async () => {
    vi.useFakeTimers();
    const { taken, worker, pq } = setup<string>();
    pq.add('due-at-30', 1, { delay: 30 });
    pq.add('due-at-10', 1, { delay: 10 });
    await vi.advanceTimersByTimeAsync(20);
    pq.add('added-at-20', 1);
    pq.add('higher-number', 2);
    await vi.advanceTimersByTimeAsync(20); // t = 40: everything is due
    worker.start();
    await vi.advanceTimersByTimeAsync(0);
    await worker.waitUntilIdle();
    expect(taken).toEqual(['due-at-10', 'added-at-20', 'due-at-30', 'higher-number']);
  });

  it('with equal numbers it starts jobs exactly like a plain queue, also when a retry comes due at the same instant as jobs already due', async () => {
    // 'a' fails its first attempt synchronously and is retried without backoff at t = 10, when
    // 'b' and 'c' (added after it) are due too: due time ties, so add order puts 'a' first (SPEC 5),
    // in a priority queue with equal numbers ("FIFO among equal numbers") as in a queue.
    vi.useFakeTimers();
    const run = async (kind: 'queue' | 'priority-queue'): Promise<string[]> => {
      const taken: string[] = [];
      const worker = new Worker(
        (job: Job<string>) => {
          taken.push(job.data);
          if (job.data === 'a' && job.attempt === 1) throw new Error('first attempt fails');
        },
        { retry: { attempts: 2 } },
      );
      if (kind === 'queue') worker.bindQueue().addAll(['a', 'b', 'c'], { delay: 10 });
      else
        worker.bindPriorityQueue().addAll(
          ['a', 'b', 'c'].map((data) => ({ data, priority: 1 })),
          { delay: 10 },
        );
      await vi.advanceTimersByTimeAsync(10);
      await worker.waitUntilIdle();
      return taken;
    };
    expect(await run('priority-queue')).toEqual(['a', 'a', 'b', 'c']);
    expect(await run('queue')).toEqual(['a', 'a', 'b', 'c']);
  });

  it('with equal numbers it starts jobs exactly like a plain queue, also when a parked redrive joins at the same instant as a new job', async () => {
    // 'x' times out at 10 and is redriven while its handler still runs (it ends at 20): the
    // redrive waits for that handler. At 20 'y' is added, then x's handler ends. Both are due at
    // 20; the redrive was added first (at 10), so it starts first (SPEC 5), in both kinds.
    vi.useFakeTimers();
    const run = async (kind: 'queue' | 'priority-queue'): Promise<string[]> => {
      const taken: string[] = [];
      const worker = new Worker((job: Job<string>) => {
        taken.push(job.data);
        return job.data === 'x' ? new Promise<void>((resolve) => setTimeout(resolve, 20)) : undefined;
      });
      const queue = kind === 'queue' ? worker.bindQueue() : undefined;
      const pq = kind === 'priority-queue' ? worker.bindPriorityQueue() : undefined;
      const add = (data: string, options?: { delay?: number; timeout?: number }): void => {
        if (queue !== undefined) queue.add(data, options);
        else pq?.add(data, 1, options);
      };
      add('x', { timeout: 10 });
      add('later', { delay: 1000 });
      setTimeout(() => add('y'), 20); // armed before x's handler runs: it fires first at 20
      await vi.advanceTimersByTimeAsync(10);
      expect(worker.deadLetters.map((entry) => entry.data)).toEqual(['x']);
      worker.redrive(worker.deadLetters[0] as (typeof worker.deadLetters)[number]);
      await vi.advanceTimersByTimeAsync(2000);
      await worker.waitUntilIdle();
      return taken;
    };
    expect(await run('priority-queue')).toEqual(['x', 'x', 'y', 'later']);
    expect(await run('queue')).toEqual(['x', 'x', 'y', 'later']);
  });

  it('a redrive parked behind its running predecessor is due when it joins: a job added meanwhile at the same number goes first', async () => {
    // 'x' times out at 10 and is redriven at 20 while its handler runs on (it ends at 100). 'y'
    // is added at 50, due at once; the redrive joins only at 100, so 'y' was due first (SPEC 5).
    vi.useFakeTimers();
    const run = async (kind: 'queue' | 'priority-queue'): Promise<string[]> => {
      const taken: string[] = [];
      const worker = new Worker((job: Job<string>) => {
        taken.push(job.data);
        return job.data === 'x' && taken.length === 1 ? new Promise<void>((resolve) => setTimeout(resolve, 100)) : undefined;
      });
      const queue = kind === 'queue' ? worker.bindQueue() : undefined;
      const pq = kind === 'priority-queue' ? worker.bindPriorityQueue() : undefined;
      const add = (data: string, options?: { timeout?: number }): void => {
        if (queue !== undefined) queue.add(data, options);
        else pq?.add(data, 1, options);
      };
      add('x', { timeout: 10 });
      await vi.advanceTimersByTimeAsync(20);
      worker.redrive(worker.deadLetters[0] as (typeof worker.deadLetters)[number]);
      await vi.advanceTimersByTimeAsync(30);
      add('y');
      await vi.advanceTimersByTimeAsync(100);
      await worker.waitUntilIdle();
      return taken;
    };
    expect(await run('queue')).toEqual(['x', 'y', 'x']);
    expect(await run('priority-queue')).toEqual(['x', 'y', 'x']);
  });

  it('a lower priority number beats an earlier due time', async () => {
    vi.useFakeTimers();
    const { taken, worker, pq } = setup<string>();
    pq.add('early-but-5', 5, { delay: 1 });
    await vi.advanceTimersByTimeAsync(10);
    pq.add('late-but-0', 0);
    worker.start();
    await vi.advanceTimersByTimeAsync(0);
    await worker.waitUntilIdle();
    expect(taken).toEqual(['late-but-0', 'early-but-5']);
  });

  it('addAll takes { data, priority } items and orders them like single adds', async () => {
    const { taken, worker, pq } = setup<string>();
    const group = pq.addAll([
      { data: 'c', priority: 3 },
      { data: 'a', priority: 1 },
      { data: 'b', priority: 2 },
      { data: 'a2', priority: 1 },
    ]);
    expect(group.handles).toHaveLength(4);
    expect(pq.length).toBe(4);
    worker.start();
    await group.settled();
    expect(taken).toEqual(['a', 'a2', 'b', 'c']);
  });

  it('tryAdd returns a handle, or undefined when full or closed', () => {
    const worker = new Worker((job: Job<string>) => job.data, { autoRun: false });
    const pq = worker.bindPriorityQueue({ capacity: 1 });
    expect(pq.tryAdd('a', 1)?.status).toBe('waiting');
    expect(pq.tryAdd('b', 0)).toBeUndefined();
    const other = worker.bindPriorityQueue();
    other.close();
    expect(other.tryAdd('c', 0)).toBeUndefined();
    expect(pq.length).toBe(1);
    expect(other.length).toBe(0);
  });

  it('keeps priority order after cancelled jobs are skipped', async () => {
    const { taken, worker, pq } = setup<number>();
    const handles = Array.from({ length: 10 }, (_, i) => pq.add(i, 10 - i));
    for (const handle of handles.filter((_, i) => i % 3 === 0)) handle.cancel();
    expect(pq.length).toBe(6);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual([8, 7, 5, 4, 2, 1]);
  });
});
