/**
 * Handles are thenables (issue 33): `await queue.add(x)` gives the handler's result, as p-queue
 * and p-limit users expect, and `await queue.addAll(xs)` the results in add order; awaiting makes
 * the same promise `result()` does, and nothing is made before. `console.log(handle)` shows the
 * job, not the record's internals.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CancelledError, Worker, type Job, type JobHandle, type Task } from '../src/index.js';

describe('await on a job handle', () => {
  it('gives what the handler returned (a function worker: the p-limit habit)', async () => {
    const limit = new Worker<number>({ concurrency: 2 });
    const q = limit.bindQueue();
    const answer: number = await q.add(async () => 42);
    expect(answer).toBe(42);
    expect(await q.add(() => 7)).toBe(7);
  });

  it('rejects with the job’s error, and with a CancelledError for a cancelled job', async () => {
    const worker = new Worker((job: Job<string>) => {
      throw new Error(`bad ${job.data}`);
    });
    const q = worker.bindQueue();
    await expect(q.add('x')).rejects.toThrow('bad x');
    const paused = new Worker((job: Job<string>) => job.data, { autoRun: false });
    const handle = paused.bindQueue().add('y');
    handle.cancel('no longer needed');
    await expect(handle).rejects.toBeInstanceOf(CancelledError);
  });

  it('uses the result() promise: made on the first await, the same one afterwards', async () => {
    const worker = new Worker((job: Job<number>) => job.data * 2, { autoRun: false });
    const handle = worker.bindQueue().add(21) as JobHandle<number> & { promised: unknown };
    expect(handle.promised).toBeUndefined(); // adding made no promise
    const awaited = handle.then((value) => value + 1);
    expect(handle.promised).toBeDefined();
    const result = handle.result();
    expect(handle.result()).toBe(result);
    worker.start();
    expect(await awaited).toBe(43);
    expect(await result).toBe(42);
  });

  it('works after the job settled, and with Promise.all over handles', async () => {
    const worker = new Worker((job: Job<number>) => job.data + 1);
    const q = worker.bindQueue();
    const handles = [q.add(1), q.add(2), q.add(3)];
    await worker.waitUntilIdle();
    expect(await handles[0]).toBe(2);
    expect(await Promise.all(handles)).toEqual([2, 3, 4]);
  });

  it('makes a handler that returns another job’s handle wait for that job’s result', async () => {
    const second = new Worker((job: Job<string>) => job.data.toUpperCase());
    const upper = second.bindQueue();
    const first = new Worker((job: Job<string>) => upper.add(job.data));
    expect(await first.bindQueue().add('chained')).toBe('CHAINED');
  });
});

describe('await on a group of handles', () => {
  it('gives every result in add order, and rejects with the first error', async () => {
    const worker = new Worker<number>({ concurrency: 3 });
    const q = worker.bindQueue();
    const tasks: Task<number>[] = [async () => 1, () => 2, async () => 3];
    const results: number[] = await q.addAll(tasks);
    expect(results).toEqual([1, 2, 3]);
    await expect(
      q.addAll([
        () => 1,
        () => {
          throw new Error('second');
        },
      ]),
    ).rejects.toThrow('second');
  });

  it('works for a priority queue’s addAll too', async () => {
    const worker = new Worker((job: Job<string>) => job.data.length, { autoRun: false });
    const pq = worker.bindPriorityQueue();
    const group = pq.addAll([
      { data: 'aaa', priority: 2 },
      { data: 'b', priority: 1 },
    ]);
    worker.start();
    expect(await group).toEqual([3, 1]);
  });
});

describe('console.log(handle)', () => {
  it('prints JobHandle { id, source, status, attempts }', async () => {
    const worker = new Worker((job: Job<string>) => job.data, { autoRun: false });
    const handle = worker.bindQueue({ name: 'mail' }).add('x', { id: 'order-7' });
    // Node lays it out on one line or several, as its width allows: compare the words.
    const shown = (): string => inspect(handle).replace(/\s+/g, ' ');
    expect(shown()).toBe("JobHandle { id: 'order-7', source: 'mail', status: 'waiting', attempts: 0 }");
    worker.start();
    await handle;
    expect(shown()).toBe("JobHandle { id: 'order-7', source: 'mail', status: 'succeeded', attempts: 1 }");
  });
});
