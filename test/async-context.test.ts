/**
 * SPEC 13: a handler runs in the async context of the call that added its job, for every
 * attempt, whatever started it; events are emitted in their job's context; no context outlives
 * its job. Each test starts the work from ANOTHER context (a completion of a job added
 * elsewhere, the wake-up timer advanced from inside another `als.run`), so that without the
 * propagation the handler would see the wrong store. Virtual time except for threads, remote
 * sources and garbage collection.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Topic, Worker, type Job, type Task } from '../src/index.js';
import { deferred, flushMicrotasks } from './helpers.js';
import { MemoryEngine } from './support/memory-engine.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const als = new AsyncLocalStorage<string>();
const store = (): string => als.getStore() ?? '(none)';
/** `fn` inside `als.run(name)`. */
const within = <R>(name: string, fn: () => R): R => als.run(name, fn);

afterEach(() => {
  vi.useRealTimers();
});

/** A handler that notes the store it runs in, then lets the next job start from its own completion. */
function noting(seen: string[]): (job: Job<unknown>) => Promise<void> {
  return async (job) => {
    seen.push(`${String(job.data)}:${store()}`);
    await Promise.resolve();
  };
}

describe('a handler runs in the context of its add', () => {
  it('queue: jobs started by another job completion see their own add context, or none', async () => {
    const seen: string[] = [];
    const worker = new Worker(noting(seen));
    const queue = worker.bindQueue();
    within('a', () => queue.add('A'));
    within('b', () => queue.add('B'));
    queue.add('C');
    await within('elsewhere', () => worker.waitUntilIdle());
    expect(seen).toEqual(['A:a', 'B:b', 'C:(none)']);
  });

  it('100 adds in one tick from 100 contexts, concurrency 1: each handler sees its own store', async () => {
    const seen: string[] = [];
    const worker = new Worker(noting(seen));
    const queue = worker.bindQueue();
    for (let i = 0; i < 100; i++) within(`r${i}`, () => queue.add(i));
    await worker.waitUntilIdle();
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => `${i}:r${i}`));
  });

  it('priority queue: the order is by priority, the context by add', async () => {
    const seen: string[] = [];
    const worker = new Worker(noting(seen), { autoRun: false });
    const pq = worker.bindPriorityQueue();
    within('low', () => pq.add('L', 5));
    within('high', () => pq.add('H', 0));
    within('mid', () => pq.add('M', 2));
    within('starter', () => worker.start());
    await worker.waitUntilIdle();
    expect(seen).toEqual(['H:high', 'M:mid', 'L:low']);
  });

  it('keyed queue: jobs taken in key turns keep their add context', async () => {
    const seen: string[] = [];
    const worker = new Worker(noting(seen), { autoRun: false });
    const queue = worker.bindQueue({ keys: { by: (data: unknown) => String(data).slice(0, 1) } });
    within('x1', () => queue.add('x1'));
    within('x2', () => queue.add('x2'));
    within('y1', () => queue.add('y1'));
    within('starter', () => worker.start());
    await worker.waitUntilIdle();
    expect(seen.sort()).toEqual(['x1:x1', 'x2:x2', 'y1:y1']);
  });

  it('topics: every delivery of a publish runs in the publisher context', async () => {
    const seen: string[] = [];
    const topic = new Topic<string>();
    const one = new Worker(noting(seen));
    const two = new Worker(noting(seen));
    const first = one.bindQueue();
    one.subscribe(topic);
    two.subscribe(topic);
    within('other', () => first.add('blocker'));
    within('publisher', () => topic.publish('news'));
    await Promise.all([one.waitUntilIdle(), two.waitUntilIdle()]);
    expect(seen.sort()).toEqual(['blocker:other', 'news:publisher', 'news:publisher']);
  });

  it('addAll and tryAdd: each job runs in the context of the call that added it', async () => {
    const seen: string[] = [];
    const worker = new Worker(noting(seen));
    const queue = worker.bindQueue();
    within('first', () => queue.add('first'));
    within('all', () => queue.addAll(['g1', 'g2']));
    within('try', () => queue.tryAdd('t'));
    await worker.waitUntilIdle();
    expect(seen).toEqual(['first:first', 'g1:all', 'g2:all', 't:try']);
  });

  it('function workers: the function runs in the context of its add', async () => {
    const worker = new Worker<string>({ concurrency: 1 });
    const queue = worker.bindQueue();
    const task: Task<string> = async () => {
      await Promise.resolve();
      return store();
    };
    const a = within('a', () => queue.add(task));
    const b = within('b', () => queue.add(task));
    const c = queue.add(task);
    expect(await Promise.all([a.result(), b.result(), c.result()])).toEqual(['a', 'b', '(none)']);
  });

  it('delayed jobs: started by the wake-up timer (advanced from another context), they run in their add context', async () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    const worker = new Worker(noting(seen));
    const queue = worker.bindQueue();
    within('later', () => queue.add('D', { delay: 1000 }));
    queue.add('now');
    await flushMicrotasks();
    await within('timer', () => vi.advanceTimersByTimeAsync(1000));
    expect(seen).toEqual(['now:(none)', 'D:later']);
  });

  it('retries: every attempt, its retrying and failed events run in the add context', async () => {
    vi.useFakeTimers();
    const attempts: string[] = [];
    const events: string[] = [];
    const worker = new Worker(
      (job: Job<string>) => {
        attempts.push(`${job.attempt}:${store()}`);
        throw new Error('no');
      },
      { retry: { attempts: 3, backoff: { type: 'fixed', delay: 100 } } },
    );
    worker.on('retrying', (job) => events.push(`retrying ${job.attempt}:${store()}`));
    worker.on('failed', () => events.push(`failed:${store()}`));
    worker.on('dead', () => events.push(`dead:${store()}`));
    const queue = worker.bindQueue();
    const handle = within('adder', () => queue.add('R'));
    await flushMicrotasks();
    await within('timer', () => vi.advanceTimersByTimeAsync(100));
    await within('timer', () => vi.advanceTimersByTimeAsync(100));
    await handle.settled();
    expect(attempts).toEqual(['1:adder', '2:adder', '3:adder']);
    expect(events).toEqual(['retrying 1:adder', 'retrying 2:adder', 'failed:adder', 'dead:adder']);
  });

  it('timeouts: the abort, the retry after it and the failure run in the add context', async () => {
    vi.useFakeTimers();
    const seen: string[] = [];
    const worker = new Worker(
      (job: Job<string>) =>
        new Promise<never>((_resolve, reject) => {
          seen.push(`run ${job.attempt}:${store()}`);
          job.signal.addEventListener('abort', () => {
            seen.push(`abort ${job.attempt}:${store()}`);
            reject(job.signal.reason);
          });
        }),
      { timeout: 50, retry: { attempts: 2, backoff: { type: 'fixed', delay: 10 } } },
    );
    worker.on('failed', () => seen.push(`failed:${store()}`));
    const queue = worker.bindQueue();
    const handle = within('adder', () => queue.add('T'));
    await flushMicrotasks();
    for (let i = 0; i < 4; i++) await within('timer', () => vi.advanceTimersByTimeAsync(50));
    await handle.settled();
    expect(seen).toEqual(['run 1:adder', 'abort 1:adder', 'run 2:adder', 'abort 2:adder', 'failed:adder']);
  });

  it('redrive: the redriven job runs in the context of the redrive', async () => {
    const seen: string[] = [];
    const worker = new Worker((job: Job<string>) => {
      seen.push(`${job.data}:${store()}`);
      if (seen.length === 1) throw new Error('first time');
    });
    const queue = worker.bindQueue();
    within('adder', () => queue.add('J'));
    await worker.waitUntilIdle();
    within('blocker', () => queue.add('B'));
    const entry = worker.deadLetters[0];
    if (entry === undefined) throw new Error('expected a dead letter');
    within('redriver', () => worker.redrive(entry));
    await worker.waitUntilIdle();
    expect(seen).toEqual(['J:adder', 'B:blocker', 'J:redriver']);
  });

  it('asyncContext: false runs each handler in whatever context started it', async () => {
    const seen: string[] = [];
    const worker = new Worker(noting(seen), { asyncContext: false });
    const queue = worker.bindQueue();
    within('a', () => queue.add('A'));
    within('b', () => queue.add('B'));
    await worker.waitUntilIdle();
    expect(seen).toEqual(['A:a', 'B:a']);
  });

  it('asyncContext must be a boolean', () => {
    expect(() => new Worker(() => {}, { asyncContext: 'yes' as unknown as boolean })).toThrow(
      new TypeError('qmux: worker option "asyncContext" must be true or false, got "yes"'),
    );
  });
});

describe('events are emitted in the context of their job', () => {
  it('active, completed, progress and cancelled, whoever caused them', async () => {
    const events: string[] = [];
    const gate = deferred();
    const worker = new Worker(async (job: Job<string>) => {
      await gate.promise;
      job.updateProgress(1);
    });
    const note = (event: string, job: Job<string>): void => {
      events.push(`${event} ${job.data}:${store()}`);
    };
    worker.on('active', (job) => note('active', job));
    worker.on('completed', (job) => note('completed', job));
    worker.on('progress', (job) => note('progress', job));
    worker.on('cancelled', (job) => note('cancelled', job));
    const queue = worker.bindQueue();
    within('a', () => queue.add('A'));
    const b = within('b', () => queue.add('B'));
    within('c', () => queue.add('C'));
    await flushMicrotasks();
    within('canceller', () => b.cancel());
    within('opener', () => gate.resolve());
    await worker.waitUntilIdle();
    expect(events).toEqual(['active A:a', 'cancelled B:b', 'progress A:a', 'completed A:a', 'active C:c', 'progress C:c', 'completed C:c']);
  });
});

describe('worker events that no job causes', () => {
  it('idle and stopped are emitted outside the context of the job whose end caused them', async () => {
    const worker = new Worker(async () => {
      await Promise.resolve();
    });
    const seen: string[] = [];
    worker.on('idle', () => seen.push(`idle:${store()}`));
    worker.on('stopped', () => seen.push(`stopped:${store()}`));
    const queue = worker.bindQueue();
    await within('request-A', () => queue.add('a')).settled();
    await flushMicrotasks();
    await within('request-B', () => queue.add('b')).settled();
    await within('request-C', () => worker.stop());
    expect(seen).toEqual(['idle:(none)', 'idle:(none)', 'stopped:(none)']);
  });
});

describe('threads and remote sources', () => {
  it('remote jobs run in the context the source was bound in', async () => {
    const engine = new MemoryEngine();
    engine.add('r1');
    const seen: string[] = [];
    const worker = new Worker(noting(seen));
    within('binder', () => worker.bindRemote(engine.adapter(), { name: 'shared' }));
    within('local', () => worker.bindQueue().add('L'));
    for (let i = 0; i < 50 && seen.length < 2; i++) await new Promise((resolve) => setImmediate(resolve));
    within('elsewhere', () => engine.add('r2'));
    for (let i = 0; i < 50 && seen.length < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    await worker.stop();
    expect(seen.sort()).toEqual(['L:local', 'r1:binder', 'r2:binder']);
  });

  it('thread jobs: their events come in the add context, in the main thread', async () => {
    const { Worker: BuiltWorker } = await import('../dist/index.js');
    const worker = new BuiltWorker(new URL('./fixtures/threads/progress.mjs', import.meta.url), { concurrency: 1, minThreads: 1 });
    const events: string[] = [];
    worker.on('active', () => events.push(`active:${store()}`));
    worker.on('progress', () => events.push(`progress:${store()}`));
    worker.on('completed', () => events.push(`completed:${store()}`));
    const queue = worker.bindQueue();
    const a = within('a', () => queue.add({ reports: 1 }));
    const b = within('b', () => queue.add({ reports: 1 }));
    await Promise.all([a.result(), b.result()]);
    await worker.stop();
    expect(events).toEqual(['active:a', 'progress:a', 'completed:a', 'active:b', 'progress:b', 'completed:b']);
  });
});

describe('no context is kept alive after its job settles', () => {
  /** Lets WeakRef targets of the current job go, then collects. */
  async function collect(): Promise<void> {
    for (let i = 0; i < 4; i++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      gc();
    }
  }

  const objectStore = new AsyncLocalStorage<object>();

  it('a kept handle of a succeeded, failed or cancelled job holds no store, nor does a timer armed in its context', async () => {
    const worker = new Worker(async (job: Job<string>) => {
      await Promise.resolve();
      if (job.data === 'fail') throw new Error('no');
    });
    // One start per hour: the second job's wait arms the wake-up timer while the first job's context is current.
    const queue = worker.bindQueue({ rateLimit: { limit: 1, interval: 3_600_000 } });
    const other = worker.bindQueue();
    const refs: WeakRef<object>[] = [];
    const addIn = (add: () => ReturnType<typeof queue.add>) => {
      const context = { big: new Array(1000).fill(0) };
      refs.push(new WeakRef(context));
      return objectStore.run(context, add);
    };
    const handles = [addIn(() => queue.add('ok')), addIn(() => other.add('fail')), addIn(() => other.add('cancelled', { delay: 3_600_000 }))];
    const waiting = queue.add('waits for the window');
    handles[2]?.cancel();
    await Promise.all(handles.map((handle) => handle.settled()));
    await collect();
    expect(refs.map((ref) => ref.deref() !== undefined)).toEqual([false, false, false]);
    expect(handles.map((handle) => handle.status)).toEqual(['succeeded', 'failed', 'cancelled']);
    waiting.cancel();
    await worker.stop();
  });

  it('a thread job timed out with minThreads 1 leaves no context in the thread made to replace the one ended', async () => {
    const { Worker: BuiltWorker } = await import('../dist/index.js');
    const worker = new BuiltWorker(new URL('./fixtures/threads/slow.mjs', import.meta.url), { concurrency: 1, minThreads: 1 });
    const queue = worker.bindQueue();
    await queue.add({ ms: 0 }).settled(); // the pool and its thread, made outside any context
    const refs: WeakRef<object>[] = [];
    const handle = (() => {
      const context = { big: new Array(1000).fill(0) };
      refs.push(new WeakRef(context));
      return objectStore.run(context, () => queue.add({ ms: 60_000 }, { timeout: 50 }));
    })();
    await handle.settled();
    expect(handle.status).toBe('failed');
    await queue.add({ ms: 0 }).settled(); // runs on the replacement thread
    await collect();
    const alive = refs[0]?.deref() !== undefined;
    await worker.stop();
    expect(alive).toBe(false);
  }, 30_000);

  // On Node 20 and 22 (AsyncLocalStorage on async_hooks) this store stays reachable (on Node 20
  // even with `asyncContext: false`, so not through qmux's capture). From Node 24
  // (AsyncContextFrame) it is collected once qmux makes the pool outside the job's context, and
  // kept when it does not.
  it.skipIf(Number(process.versions.node.split('.')[0]) < 24)(
    'the threads a job of a threads worker started keep no context of that job',
    async () => {
      const { Worker: BuiltWorker } = await import('../dist/index.js');
      const worker = new BuiltWorker(new URL('./fixtures/threads/echo.mjs', import.meta.url), { concurrency: 1, idleTimeout: 60_000 });
      const queue = worker.bindQueue();
      const refs: WeakRef<object>[] = [];
      const run = (): Promise<unknown> => {
        const context = { big: new Array(1000).fill(0) };
        refs.push(new WeakRef(context));
        return objectStore.run(context, () => queue.add(1).result());
      };
      await run();
      await collect();
      const alive = refs[0]?.deref() !== undefined;
      await worker.stop();
      expect(alive).toBe(false);
    },
  );
});
