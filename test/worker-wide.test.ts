/**
 * Worker-wide reads and controls a command-line script needs (issue 33): `worker.sources`,
 * `worker.purge()` over every source, and `worker.numSettled` for a "done of total" line. The
 * CLI idiom: on Ctrl-C purge, and let `waitUntilIdle()` resolve once the running jobs are done.
 */
import { describe, expect, it } from 'vitest';
import { CancelledError, Topic, Worker, type Job } from '../src/index.js';
import { Gate, flushMicrotasks } from './helpers.js';

describe('worker.sources', () => {
  it('lists the bound sources in list order, and a fresh array each time', () => {
    const worker = new Worker((job: Job<string>) => job.data, { autoRun: false });
    expect(worker.sources).toEqual([]);
    const low = worker.bindQueue({ name: 'low' });
    const high = worker.bindPriorityQueue({ name: 'high', priority: 1 });
    const sub = worker.subscribe(new Topic<string>(), { name: 'news' });
    expect(worker.sources.map((source) => source.name)).toEqual(['high', 'low', 'news']);
    expect(worker.sources).toEqual([high, low, sub]);
    expect(worker.sources).not.toBe(worker.sources);
  });

  it('keeps an unsubscribed subscription until its delivered jobs have run', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const topic = new Topic<string>();
    const sub = worker.subscribe(topic, { name: 'news' });
    worker.bindQueue({ name: 'b' });
    topic.publish('x');
    await flushMicrotasks();
    sub.unsubscribe();
    expect(worker.sources.map((source) => source.name)).toEqual(['news', 'b']);
    gate.finishOldest('done');
    await worker.waitUntilIdle();
    expect(worker.sources.map((source) => source.name)).toEqual(['b']);
  });
});

describe('worker.purge()', () => {
  it('removes the waiting jobs of every source, due and delayed, and returns how many; running jobs go on', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 1 });
    const q = worker.bindQueue();
    const pq = worker.bindPriorityQueue();
    const topic = new Topic<string>();
    worker.subscribe(topic);
    const running = q.add('running');
    await flushMicrotasks();
    const waiting = [q.add('a'), q.add('later', { delay: 60_000 }), pq.add('b', 2), ...topic.publish('c')];
    expect(worker.numPending).toBe(4);
    expect(worker.purge()).toBe(4);
    expect(worker.numPending).toBe(0);
    for (const handle of waiting) await expect(handle.result()).rejects.toBeInstanceOf(CancelledError);
    expect(running.status).toBe('running');
    const idle = worker.waitUntilIdle();
    gate.finishOldest('done');
    await idle;
    expect(await running).toBe('done');
    expect(worker.purge()).toBe(0);
  });
});

describe('worker.numSettled', () => {
  it('counts succeeded, failed and cancelled jobs: "done of total"', async () => {
    const worker = new Worker(
      (job: Job<number>) => {
        if (job.data === 2) throw new Error('two');
        return job.data;
      },
      { autoRun: false },
    );
    const q = worker.bindQueue();
    const handles = [1, 2, 3, 4].map((n) => q.add(n));
    expect(worker.numSettled).toBe(0);
    handles[3]?.cancel();
    expect(worker.numSettled).toBe(1);
    worker.start();
    await worker.waitUntilIdle();
    expect([worker.numSettled, worker.stats().counters.added]).toEqual([4, 4]);
  });

  it('does not count a retried attempt, only the job once it settles', async () => {
    let calls = 0;
    const worker = new Worker(
      () => {
        if (++calls === 1) throw new Error('once');
        return 'ok';
      },
      { retry: { attempts: 2 } },
    );
    await worker.bindQueue().add('x');
    expect([calls, worker.numSettled]).toEqual([2, 1]);
  });
});
