/**
 * Job ids (SPEC 5): a user-given `id` is unique within its source while the job is in use (from
 * the add until it has settled and no attempt of it runs); adding it again returns the existing
 * handle and counts as `deduplicated`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JobIdInUseError, Topic, Worker, type Job } from '../src/index.js';
import { Gate, flushMicrotasks } from './helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('a job id in use in its source', () => {
  it('makes a second add return the existing handle, add nothing and count as deduplicated, not added', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue({ name: 'jobs' });
    const first = q.add('a', { id: 'order-1' });
    const second = q.add('b', { id: 'order-1' });
    expect(second).toBe(first);
    expect(q.length).toBe(1);
    const stats = worker.stats();
    expect(stats.counters.added).toBe(1);
    expect(stats.counters.deduplicated).toBe(1);
    expect(stats.sources.jobs?.counters.deduplicated).toBe(1);
  });

  it('ignores the second add’s options (delay, signal, timeout)', async () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    const worker = new Worker((job: Job<string>) => void seen.push(job.data));
    const q = worker.bindQueue();
    const first = q.add('a', { id: 'x' });
    const aborted = AbortSignal.abort('no');
    const second = q.add('b', { id: 'x', delay: 10_000, signal: aborted, timeout: 1 });
    expect(second).toBe(first);
    expect(first.status).toBe('waiting');
    await worker.waitUntilIdle();
    expect(seen).toEqual(['a']);
    expect(first.status).toBe('succeeded');
  });

  it('returns the existing handle whatever its status: waiting, delayed, running', async () => {
    vi.useFakeTimers();
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    const delayed = q.add('d', { id: 'delayed', delay: 1000 });
    expect(q.add('d2', { id: 'delayed' })).toBe(delayed);
    const running = q.add('r', { id: 'running' });
    await flushMicrotasks();
    expect(running.status).toBe('running');
    expect(q.add('r2', { id: 'running' })).toBe(running);
    const waiting = q.add('w', { id: 'waiting' });
    expect(waiting.status).toBe('waiting');
    expect(q.add('w2', { id: 'waiting' })).toBe(waiting);
    expect(worker.stats().counters.deduplicated).toBe(3);
    gate.finishAll();
  });

  it('returns the existing handle even when the source is full or closed, from add and tryAdd', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue({ capacity: 1 });
    const first = q.add('a', { id: 'only' });
    expect(q.add('b', { id: 'only' })).toBe(first);
    expect(q.tryAdd('b', { id: 'only' })).toBe(first);
    expect(q.tryAdd('c', { id: 'other' })).toBeUndefined();
    q.close();
    expect(q.add('b', { id: 'only' })).toBe(first);
    expect(q.tryAdd('b', { id: 'only' })).toBe(first);
    expect(() => q.add('c', { id: 'other' })).toThrow(/closed/);
  });

  it('works the same in a priority queue (the second priority is ignored too)', async () => {
    const seen: string[] = [];
    const worker = new Worker((job: Job<string>) => void seen.push(job.data), { autoRun: false });
    const pq = worker.bindPriorityQueue();
    const first = pq.add('a', 5, { id: 'p' });
    pq.add('c', 1);
    expect(pq.add('b', 0, { id: 'p' })).toBe(first);
    expect(pq.tryAdd('b', 0, { id: 'p' })).toBe(first);
    expect(pq.length).toBe(2);
    worker.start();
    await worker.waitUntilIdle();
    expect(seen).toEqual(['c', 'a']);
  });

  it('is per source: the same id in another source of the same worker is another job', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const a = worker.bindQueue({ name: 'a' });
    const b = worker.bindQueue({ name: 'b' });
    const inA = a.add(1, { id: 'same' });
    const inB = b.add(2, { id: 'same' });
    expect(inB).not.toBe(inA);
    expect([inA.id, inB.id]).toEqual(['same', 'same']);
    expect(worker.stats().counters.deduplicated).toBe(0);
  });

  it('is free again once the job has settled (succeeded, failed, cancelled or purged)', async () => {
    const worker = new Worker((job: Job<string>) => {
      if (job.data === 'fail') throw new Error('no');
      return job.data;
    });
    const q = worker.bindQueue();
    const ok = q.add('ok', { id: 'x' });
    await ok.settled();
    const failed = q.add('fail', { id: 'x' });
    expect(failed).not.toBe(ok);
    await failed.settled();
    worker.pause();
    const cancelled = q.add('c', { id: 'x' });
    expect(cancelled).not.toBe(failed);
    cancelled.cancel();
    const purged = q.add('p', { id: 'x' });
    expect(purged).not.toBe(cancelled);
    q.purge();
    const last = q.add('last', { id: 'x' });
    expect(last).not.toBe(purged);
    expect(worker.stats().counters.deduplicated).toBe(0);
  });

  it('stays in use between attempts of a retried job (the job has not settled)', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const worker = new Worker(
      () => {
        calls++;
        if (calls === 1) throw new Error('first fails');
        return 'ok';
      },
      { retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } },
    );
    const q = worker.bindQueue();
    const first = q.add('a', { id: 'r' });
    await flushMicrotasks();
    expect(first.status).toBe('delayed');
    expect(q.add('b', { id: 'r' })).toBe(first);
    await vi.advanceTimersByTimeAsync(100);
    expect(await first.result()).toBe('ok');
    expect(q.add('c', { id: 'r' })).not.toBe(first);
  });

  it('stays in use while a cancelled job’s handler still runs, and is free once it returns', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 2 });
    const q = worker.bindQueue();
    const first = q.add('a', { id: 'c' });
    await flushMicrotasks();
    first.cancel();
    expect(first.status).toBe('cancelled');
    expect(q.add('b', { id: 'c' })).toBe(first);
    gate.finishOldest();
    await flushMicrotasks();
    const next = q.add('b', { id: 'c' });
    expect(next).not.toBe(first);
    await flushMicrotasks();
    gate.finishAll();
  });

  it('is not taken by a job added with an already-aborted signal (it never joins its source)', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue();
    const gone = q.add('a', { id: 'z', signal: AbortSignal.abort() });
    expect(gone.status).toBe('cancelled');
    const next = q.add('b', { id: 'z' });
    expect(next).not.toBe(gone);
    expect(next.status).toBe('waiting');
  });
});

describe('ids, given and generated', () => {
  it('a job without an id gets a generated one (a decimal integer), and no user id can take that form', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue();
    const generated = q.add('a');
    expect(generated.id).toMatch(/^\d+$/);
    expect(() => q.add('b', { id: generated.id })).toThrow(RangeError);
    expect(() => q.add('b', { id: generated.id })).toThrow(/add option "id"/);
    expect(() => q.add('b', { id: '' })).toThrow(TypeError);
    expect(() => q.add('b', { id: 7 as unknown as string })).toThrow(TypeError);
    // Anything else that is not only digits is a user id.
    for (const id of ['a', '42a', '-1', ' 1', '1.0', 'order-42']) expect(q.add('c', { id }).id).toBe(id);
  });

  it('addAll takes no id option (one id cannot name many jobs)', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue();
    const pq = worker.bindPriorityQueue();
    expect(() => q.addAll([1, 2], { id: 'batch' } as never)).toThrow(TypeError);
    expect(() => q.addAll([1, 2], { id: 'batch' } as never)).toThrow(/"id"/);
    expect(() => pq.addAll([{ data: 1, priority: 0 }], { id: 'batch' } as never)).toThrow(TypeError);
    expect(q.length + pq.length).toBe(0);
  });
});

describe('redrive and ids', () => {
  async function deadLetterWithId() {
    const worker = new Worker((job: Job<string>) => {
      if (job.data === 'bad') throw new Error('no');
      return job.data;
    });
    const q = worker.bindQueue({ name: 'jobs' });
    q.add('bad', { id: 'job-1' });
    await flushMicrotasks();
    const entry = worker.deadLetters[0];
    if (entry === undefined) throw new Error('set-up failed');
    return { worker, q, entry };
  }

  it('throws JobIdInUseError when the dead letter’s id is in use again in its source, and the entry stays', async () => {
    const { worker, q, entry } = await deadLetterWithId();
    worker.pause();
    const again = q.add('good', { id: 'job-1' });
    expect(() => worker.redrive(entry)).toThrow(JobIdInUseError);
    expect(worker.deadLetters).toContain(entry);
    again.cancel();
    const redriven = worker.redrive(entry);
    expect(redriven.id).toBe('job-1');
    expect(worker.deadLetters).not.toContain(entry);
    // The redriven job holds the id now.
    expect(q.add('x', { id: 'job-1' })).toBe(redriven);
  });

  it('the JobIdInUseError of an id held by a cancelled job whose handler still runs says to wait for that handler', async () => {
    let finish: (value: string) => void = () => {};
    const worker = new Worker((job: Job<string>) => {
      if (job.data === 'bad') throw new Error('no');
      return new Promise<string>((resolve) => (finish = resolve));
    });
    const q = worker.bindQueue({ name: 'jobs' });
    q.add('bad', { id: 'job-1' });
    await flushMicrotasks();
    const entry = worker.deadLetters[0] as NonNullable<(typeof worker.deadLetters)[0]>;
    const holder = q.add('slow', { id: 'job-1' });
    await flushMicrotasks();
    holder.cancel();
    expect(holder.status).toBe('cancelled');
    expect(() => worker.redrive(entry)).toThrow(
      'qmux: job id "job-1" is in use in source "jobs" by a cancelled job whose handler still runs; redrive the entry once that handler has returned',
    );
    finish('done');
    await flushMicrotasks();
    expect(worker.redrive(entry).id).toBe('job-1');
  });

  for (const leave of ['cancel', 'purge'] as const) {
    it(`gives the id back to the dead job whose handler still runs when its parked redrive leaves by ${leave}()`, async () => {
      vi.useFakeTimers();
      let running = 0;
      let mostRunning = 0;
      // 'slow' ignores its 100 ms timeout and runs 1 s: it fails for good at 100 ms, its handler still running.
      const worker = new Worker<string, string>(
        (job) => {
          running++;
          mostRunning = Math.max(mostRunning, running);
          return new Promise((resolve) =>
            setTimeout(
              () => {
                running--;
                resolve(job.data);
              },
              job.data === 'slow' ? 1000 : 10,
            ),
          );
        },
        { timeout: 100, concurrency: 2 },
      );
      const q = worker.bindQueue();
      const first = q.add('slow', { id: 'job-a' });
      await vi.advanceTimersByTimeAsync(100);
      expect(first.status).toBe('failed');
      expect(q.add('again', { id: 'job-a' })).toBe(first); // in use: its handler runs
      const held = worker.redrive(worker.deadLetters[0] as NonNullable<(typeof worker.deadLetters)[0]>);
      expect(q.add('again', { id: 'job-a' })).toBe(held); // the parked redrive took it over
      if (leave === 'cancel') expect(held.cancel()).toBe(true);
      else expect(q.purge()).toBe(1);
      expect(q.add('third', { id: 'job-a' })).toBe(first); // back with the job whose handler runs
      await vi.advanceTimersByTimeAsync(1000); // that handler returns: the id is free
      const fourth = q.add('fourth', { id: 'job-a' });
      expect(fourth).not.toBe(first);
      await vi.advanceTimersByTimeAsync(100);
      expect(fourth.status).toBe('succeeded');
      expect(mostRunning).toBe(1); // never two jobs of one id at once
    });
  }

  it('keeps a generated id without claiming it: redriving a job that had no id never dedupes', async () => {
    const worker = new Worker(() => {
      throw new Error('no');
    });
    const q = worker.bindQueue();
    const job = q.add('a');
    await job.settled();
    const entry = worker.deadLetters[0];
    if (entry === undefined) throw new Error('set-up failed');
    worker.pause();
    const redriven = worker.redrive(entry);
    expect(redriven.id).toBe(job.id);
    expect(worker.stats().counters.deduplicated).toBe(0);
  });
});

describe('publish with an id', () => {
  it('checks each subscription on its own: the ones where the id is in use return their existing handle', () => {
    const a = new Worker(() => undefined, { autoRun: false });
    const b = new Worker(() => undefined, { autoRun: false });
    const topic = new Topic<string>();
    const subA = a.subscribe(topic);
    const [inA] = topic.publish('first', { id: 'm-1' }); // only a subscribes so far
    const subB = b.subscribe(topic);
    subA.close(); // a closed or full subscription with the id in use does not refuse the publish
    const handles = topic.publish('msg', { id: 'm-1' });
    expect(handles).toHaveLength(2);
    expect(handles[0]).toBe(inA);
    expect(handles[1]?.id).toBe('m-1');
    expect(subB.length).toBe(1);
    expect(a.stats().counters).toMatchObject({ added: 1, deduplicated: 1 });
    expect(b.stats().counters).toMatchObject({ added: 1, deduplicated: 0 });
    // Published again: every subscription now has it.
    const again = topic.publish('msg', { id: 'm-1' });
    expect(again).toEqual(handles);
  });
});
