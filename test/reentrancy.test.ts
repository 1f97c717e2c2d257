/**
 * User code that qmux calls synchronously (event listeners, strategies, retry hooks) may call back
 * into the API at once. Each case here broke a guarantee before it was handled: a handle settled
 * twice, a count went negative, a job was lost, a start happened that should not have.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Worker, type Job, type Picker, type SourceView, type Strategy } from '../src/index.js';
import { flushMicrotasks } from './helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('purge() while a cancelled listener cancels', () => {
  it('another job of the same purge: each job settles and is counted once, and the queue stays usable', async () => {
    const worker = new Worker(async (job: Job<string>) => job.data, { autoRun: false });
    const q = worker.bindQueue();
    const handles = ['a', 'b', 'c', 'd'].map((data) => q.add(data, data === 'd' ? { delay: 50 } : undefined));
    const events: string[] = [];
    worker.on('cancelled', (job) => {
      events.push(job.data);
      if (job.data === 'a') expect(handles[2]?.cancel('cascade')).toBe(false); // already settled by the purge
    });
    expect(q.purge()).toBe(4);
    expect(events).toEqual(['a', 'b', 'c', 'd']);
    expect(worker.stats().counters.cancelled).toBe(4);
    expect([q.length, worker.numPending, worker.stats().delayed]).toEqual([0, 0, 0]);
    const late = q.add('late');
    worker.start();
    await expect(late.result()).resolves.toBe('late');
    await worker.waitUntilIdle();
  });
});

describe('a retry hook that cancels the failing job', () => {
  it.each(['retryIf', 'backoff'] as const)('from %s: the job ends cancelled only, with no retry, failure or dead letter', async (hook) => {
    vi.useFakeTimers();
    const request = new AbortController();
    const giveUp = (): void => request.abort('give up');
    const retry = hook === 'retryIf' ? { attempts: 3, retryIf: () => (giveUp(), true) } : { attempts: 3, backoff: () => (giveUp(), 0) };
    let calls = 0;
    const worker = new Worker(
      async () => {
        calls++;
        throw new Error('boom');
      },
      { retry },
    );
    const events: string[] = [];
    for (const name of ['cancelled', 'retrying', 'failed', 'dead'] as const) worker.on(name, () => void events.push(name));
    const handle = worker.bindQueue().add('x', { signal: request.signal });
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toBe(1);
    expect(handle.status).toBe('cancelled');
    expect(events).toEqual(['cancelled']);
    expect(worker.deadLetters).toHaveLength(0);
    expect(worker.stats().counters).toMatchObject({ started: 1, retried: 0, failed: 0, dead: 0, cancelled: 1 });
    expect(worker.status).toBe('idle');
  });

  it('from retryIf after a timeout: the job ends cancelled only', async () => {
    vi.useFakeTimers();
    const request = new AbortController();
    const worker = new Worker(() => new Promise<void>(() => {}), {
      timeout: 10,
      retry: { attempts: 3, retryIf: () => (request.abort('give up'), false) },
    });
    const events: string[] = [];
    for (const name of ['cancelled', 'retrying', 'failed', 'dead'] as const) worker.on(name, () => void events.push(name));
    const handle = worker.bindQueue().add('x', { signal: request.signal });
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.status).toBe('cancelled');
    expect(events).toEqual(['cancelled']);
    expect(worker.deadLetters).toHaveLength(0);
    expect(worker.stats().counters).toMatchObject({ failed: 0, dead: 0, cancelled: 1 });
  });
});

describe('an idle listener that adds work', () => {
  it('keeps waitUntilIdle() waiting until that work is done too', async () => {
    let release = (): void => {};
    const worker = new Worker((job: Job<string>) => (job.data === 'follow-up' ? new Promise<void>((resolve) => (release = resolve)) : undefined));
    const q = worker.bindQueue();
    let added = false;
    worker.on('idle', () => {
      if (!added) {
        added = true;
        q.add('follow-up');
      }
    });
    q.add('first');
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(1); // the follow-up runs
    expect(idle).toBe(false);
    release();
    await flushMicrotasks();
    expect(idle).toBe(true);
  });
});

describe('an idle listener that stops the worker', () => {
  for (const how of ['its last job finishing', 'its last waiting job cancelled', 'a purge'] as const) {
    it(`completes that stop (its promise resolves, stopped is emitted) when idle came from ${how}`, async () => {
      vi.useFakeTimers();
      const worker = new Worker(() => 'done');
      const queue = worker.bindQueue();
      const first = queue.add(1, { delay: 1000 });
      if (how === 'a purge') queue.add(2, { delay: 1000 });
      await flushMicrotasks();
      const events: string[] = [];
      worker.on('stopped', () => events.push('stopped'));
      let resolved = false;
      worker.once('idle', () => {
        events.push('idle');
        void worker.stop().then(() => {
          resolved = true;
        });
      });
      if (how === 'a purge') expect(queue.purge()).toBe(2);
      else if (how === 'its last waiting job cancelled') expect(first.cancel()).toBe(true);
      else await vi.advanceTimersByTimeAsync(1000);
      await vi.advanceTimersByTimeAsync(0);
      expect(worker.status).toBe('stopped');
      expect(events).toEqual(['idle', 'stopped']);
      expect(resolved).toBe(true);
    });
  }
});

describe('a strategy whose pick pauses, stops or lowers the concurrency', () => {
  /** First eligible source, after calling `sideEffect` once (on the first pick). */
  function sideEffecting(sideEffect: () => void): Strategy {
    return {
      name: 'SideEffect',
      create: (): Picker => {
        let done = false;
        return {
          pick: (list: readonly SourceView[]) => {
            if (!done) {
              done = true;
              sideEffect();
            }
            return list.find((view) => view.eligible) as SourceView;
          },
        };
      },
    };
  }

  it.each([
    ['pause()', (w: Worker<string, void>): void => w.pause(), 'paused'],
    ['stop()', (w: Worker<string, void>): void => void w.stop(), 'stopped'],
  ] as const)('%s: the start it was picking for does not happen', async (_name, call, status) => {
    let worker: Worker<string, void> | undefined;
    const started: string[] = [];
    worker = new Worker((job: Job<string>) => void started.push(job.data), {
      strategy: sideEffecting(() => call(worker as Worker<string, void>)),
      autoRun: false,
    });
    worker.bindQueue({ name: 'A' }).add('a1');
    worker.bindQueue({ name: 'B' }).add('b1');
    worker.start();
    await flushMicrotasks();
    expect(started).toEqual([]);
    expect(worker.status).toBe(status);
    expect(worker.numPending).toBe(2);
  });

  it('setConcurrency(1) while one job runs: no second start', async () => {
    let worker: Worker<string, void> | undefined;
    const running: string[] = [];
    worker = new Worker((job: Job<string>) => new Promise<void>(() => void running.push(job.data)), {
      concurrency: 2,
      strategy: {
        name: 'Lowering',
        create: (): Picker => {
          let picks = 0;
          return {
            pick: (list) => {
              if (++picks === 2) worker?.setConcurrency(1);
              return list.find((view) => view.eligible) as SourceView;
            },
          };
        },
      },
    });
    worker.bindQueue({ name: 'A' }).add('a1');
    worker.bindQueue({ name: 'B' }).add('b1');
    await flushMicrotasks();
    expect(running).toEqual(['a1']);
    expect(worker.numProcessing).toBe(1);
    expect(worker.concurrency).toBe(1);
    expect(worker.health().status).toBe('healthy');
  });
});

describe('stop() then start() from a listener, with nothing running', () => {
  it('from a cancelled listener: the stop resolves and "stopped" is emitted, then the worker runs again', async () => {
    vi.useFakeTimers();
    const worker = new Worker(async (job: Job<string>) => job.data, { autoRun: false });
    const q = worker.bindQueue();
    const handle = q.add('a');
    const events: string[] = [];
    let stopping: Promise<void> | undefined;
    worker.on('stopped', () => events.push('stopped'));
    worker.on('cancelled', () => {
      stopping = worker.stop();
      worker.start();
    });
    handle.cancel();
    void stopping?.then(() => events.push('stop resolved'));
    await vi.advanceTimersByTimeAsync(10);
    expect(events).toEqual(['stopped', 'stop resolved']);
    expect(worker.status).toBe('idle');
    await expect(q.add('b').result()).resolves.toBe('b');
  });

  it('from a completed listener of a synchronous handler: the stop resolves, and the other job runs after start()', async () => {
    vi.useFakeTimers();
    const worker = new Worker((job: Job<string>) => job.data);
    const q = worker.bindQueue();
    let stopping: Promise<void> | undefined;
    worker.once('completed', () => {
      stopping = worker.stop(); // the synchronous job has settled: nothing runs
      worker.start();
    });
    q.add('a');
    const second = q.add('b');
    await vi.advanceTimersByTimeAsync(1);
    let resolved = false;
    void stopping?.then(() => (resolved = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(resolved).toBe(true);
    expect(second.status).toBe('succeeded');
  });

  it('a stop() from the "stopped" listener that start() emits is the last call: the worker stays stopped', async () => {
    vi.useFakeTimers();
    const worker = new Worker(async (job: Job<string>) => job.data, { autoRun: false });
    const q = worker.bindQueue();
    const handle = q.add('a');
    let last: Promise<void> | undefined;
    worker.on('cancelled', () => {
      void worker.stop();
      worker.start();
    });
    worker.once('stopped', () => {
      last = worker.stop(); // the user's last lifecycle call
    });
    handle.cancel();
    await vi.advanceTimersByTimeAsync(10);
    let resolved = false;
    void last?.then(() => (resolved = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(resolved).toBe(true);
    expect(worker.status).toBe('stopped');
  });
});
