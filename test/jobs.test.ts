import { afterEach, describe, expect, it, vi } from 'vitest';
import { CancelledError, QmuxError, QueueClosedError, QueueFullError, Topic, Worker, type Job, type JobHandle, type Task } from '../src/index.js';
import { Gate, deferred, flushMicrotasks, nextMacrotask } from './helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('job handles', () => {
  it('go waiting, running, succeeded, and count attempts from 1', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const handle = worker.bindQueue().add('x');
    expect([handle.status, handle.attempts]).toEqual(['waiting', 0]);
    await flushMicrotasks();
    expect([handle.status, handle.attempts]).toEqual(['running', 1]);
    expect(gate.started[0]?.job.attempt).toBe(1);
    gate.finishOldest('done');
    await expect(handle.result()).resolves.toBe('done');
    expect([handle.status, handle.attempts]).toEqual(['succeeded', 1]);
  });

  it('give the handler the job’s id, data and source name', async () => {
    const seen: string[] = [];
    const worker = new Worker((job: Job<{ n: number }>) => void seen.push(`${job.id} ${job.data.n} ${job.source}`));
    const q = worker.bindQueue({ name: 'jobs' });
    const a = q.add({ n: 1 }, { id: 'my-id' });
    const b = q.add({ n: 2 });
    await worker.waitUntilIdle();
    expect(a.id).toBe('my-id');
    expect(seen).toEqual([`my-id 1 jobs`, `${b.id} 2 jobs`]);
  });

  it('get generated ids that are unique, also across queues and workers', () => {
    const ids = new Set<string>();
    for (let w = 0; w < 3; w++) {
      const worker = new Worker(() => undefined, { autoRun: false });
      const q1 = worker.bindQueue();
      const q2 = worker.bindPriorityQueue();
      for (let i = 0; i < 10; i++) {
        ids.add(q1.add(i).id);
        ids.add(q2.add(i, 0).id);
      }
    }
    expect(ids.size).toBe(60);
    for (const id of ids) expect(typeof id).toBe('string');
  });

  it('result() asked for before or after the job settles gives one promise with the outcome, whatever the outcome', async () => {
    // A job keeps its outcome in one field until its result is asked for, then in the result's
    // promise pair: every way of settling must land in the same place either way round.
    const hold = deferred<string>();
    const worker = new Worker((job: Job<string>) => {
      if (job.data === 'fails') throw new Error('boom');
      if (job.data === 'held') return hold.promise;
      return `${job.data}!`;
    });
    const q = worker.bindQueue();
    const cancelledWaiting = q.add('cancelled while waiting');
    const early = { ok: q.add('ok'), fails: q.add('fails'), held: q.add('held'), cancelledWaiting };
    const late = { ok: q.add('ok'), fails: q.add('fails'), held: q.add('held') };
    const promises = Object.fromEntries(Object.entries(early).map(([name, handle]) => [name, handle.result()]));
    for (const promise of Object.values(promises)) promise.catch(() => undefined);
    expect(cancelledWaiting.cancel('not now')).toBe(true);
    await flushMicrotasks();
    expect(early.held.cancel('stop')).toBe(true);
    expect(late.held.cancel('stop too')).toBe(true);
    hold.resolve('too late');
    await worker.waitUntilIdle();
    for (const [name, handle] of Object.entries(early)) expect(handle.result(), name).toBe(promises[name]);
    for (const handles of [early, late]) {
      await expect(handles.ok.result()).resolves.toBe('ok!');
      await expect(handles.fails.result()).rejects.toThrow('boom');
      await expect(handles.held.result()).rejects.toBeInstanceOf(CancelledError);
      expect(handles.ok.result()).toBe(handles.ok.result());
      await expect(handles.ok.settled()).resolves.toBeUndefined();
    }
    await expect(cancelledWaiting.result()).rejects.toMatchObject({ name: 'CancelledError', reason: 'not now' });
    await expect(late.held.result()).rejects.toMatchObject({ reason: 'stop too' });
  });

  it('result() resolves with what the handler returned, sync or async, and is the same promise each call', async () => {
    const worker = new Worker((job: Job<number>) => (job.data % 2 === 0 ? job.data * 10 : Promise.resolve(job.data * 100)));
    const q = worker.bindQueue();
    const even = q.add(2);
    const odd = q.add(3);
    expect(even.result()).toBe(even.result());
    expect(await even.result()).toBe(20);
    expect(await odd.result()).toBe(300);
    // Asked for only after the job settled.
    const late = q.add(4);
    await worker.waitUntilIdle();
    expect(await late.result()).toBe(40);
  });

  it('result() rejects with the handler’s error, thrown or rejected; settled() never rejects', async () => {
    const boom = new Error('boom');
    const worker = new Worker((job: Job<string>) => {
      if (job.data === 'throw') throw boom;
      return Promise.reject(boom);
    });
    const q = worker.bindQueue();
    const thrown = q.add('throw');
    const rejected = q.add('reject');
    await expect(thrown.result()).rejects.toBe(boom);
    await expect(rejected.result()).rejects.toBe(boom);
    await expect(thrown.settled()).resolves.toBeUndefined();
    expect([thrown.status, rejected.status]).toEqual(['failed', 'failed']);
    expect(thrown.attempts).toBe(1);
  });

  it('a result promise settles before waitUntilIdle() resolves, and results settle in the order their jobs did, failed or not', async () => {
    const worker = new Worker((job: Job<string>) => {
      if (job.data.startsWith('fail')) throw new Error(job.data);
      return job.data;
    });
    const q = worker.bindQueue();
    const seen: string[] = [];
    const handles = ['fail-a', 'ok-b', 'fail-c', 'ok-d'].map((name) => q.add(name));
    for (const handle of handles) {
      handle.result().then(
        (value) => seen.push(`${value}`),
        (error: Error) => seen.push(error.message),
      );
    }
    await worker.waitUntilIdle();
    // Awaiting idle, then looking at what the handlers saw, is a common pattern.
    expect(seen).toEqual(['fail-a', 'ok-b', 'fail-c', 'ok-d']);
  });

  it('settled() resolves for succeeded, failed and cancelled jobs', async () => {
    const worker = new Worker((job: Job<string>) => {
      if (job.data === 'fail') throw new Error('x');
      return job.data;
    });
    const q = worker.bindQueue();
    const ok = q.add('ok');
    const fail = q.add('fail');
    const cancelled = q.add('cancel');
    cancelled.cancel();
    await Promise.all([ok.settled(), fail.settled(), cancelled.settled()]);
    expect([ok.status, fail.status, cancelled.status]).toEqual(['succeeded', 'failed', 'cancelled']);
  });
});

describe('cancel()', () => {
  it('removes a waiting job: the handle settles cancelled at once, the handler never sees it', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    q.add('first');
    const second = q.add('second');
    q.add('third');
    await flushMicrotasks();
    expect(q.length).toBe(2);
    expect(second.cancel('not needed')).toBe(true);
    expect(second.status).toBe('cancelled');
    expect(q.length).toBe(1);
    expect(worker.numPending).toBe(1);
    const error = await second.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('not needed');
    expect((error as Error).message).toContain('not needed');
    while (gate.open.length > 0) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    await worker.waitUntilIdle();
    expect(gate.order).toEqual(['first', 'third']);
  });

  it('removes a delayed job before it comes due', async () => {
    vi.useFakeTimers();
    const ran: string[] = [];
    const worker = new Worker((job: Job<string>) => void ran.push(job.data));
    const q = worker.bindQueue();
    const handle = q.add('later', { delay: 100 });
    expect(handle.status).toBe('delayed');
    expect(handle.cancel()).toBe(true);
    expect(handle.status).toBe('cancelled');
    expect(q.length).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    expect(ran).toEqual([]);
    await expect(handle.result()).rejects.toBeInstanceOf(CancelledError);
  });

  it('aborts a running job’s signal and settles cancelled at once, but its slot stays taken until the handler settles', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    const running = q.add('running');
    q.add('next');
    await flushMicrotasks();
    const signal = gate.started[0]?.job.signal as AbortSignal;
    expect(signal.aborted).toBe(false);

    expect(running.cancel('stop it')).toBe(true);
    expect(running.status).toBe('cancelled');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(CancelledError);
    await expect(running.result()).rejects.toBeInstanceOf(CancelledError);

    await nextMacrotask();
    expect(worker.numProcessing).toBe(1);
    expect(gate.started).toHaveLength(1); // 'next' waits for the slot

    let completed = 0;
    worker.on('completed', () => completed++);
    gate.finishOldest('late result'); // ignored: the job was cancelled
    await flushMicrotasks();
    expect(running.status).toBe('cancelled');
    expect(completed).toBe(0);
    expect(gate.order).toEqual(['running', 'next']);
    gate.finishAll();
    await worker.waitUntilIdle();
  });

  it('a running job that reads its signal only after being cancelled sees it aborted', async () => {
    const gate = deferred();
    let seenAborted: boolean | undefined;
    const worker = new Worker(async (job: Job<number>) => {
      await gate.promise;
      seenAborted = job.signal.aborted;
    });
    const handle = worker.bindQueue().add(1);
    await flushMicrotasks();
    handle.cancel();
    gate.resolve();
    await worker.waitUntilIdle();
    expect(seenAborted).toBe(true);
  });

  it('returns false and changes nothing once the job has settled', async () => {
    const worker = new Worker((job: Job<number>) => {
      if (job.data === 2) throw new Error('no');
      return job.data;
    });
    const q = worker.bindQueue();
    const ok = q.add(1);
    const failed = q.add(2);
    const cancelled = q.add(3);
    expect(cancelled.cancel()).toBe(true);
    await worker.waitUntilIdle();
    expect(ok.cancel()).toBe(false);
    expect(failed.cancel()).toBe(false);
    expect(cancelled.cancel()).toBe(false);
    expect([ok.status, failed.status, cancelled.status]).toEqual(['succeeded', 'failed', 'cancelled']);
    expect(await ok.result()).toBe(1);
    await expect(failed.result()).rejects.toThrow('no');
  });
});

describe('the signal add option', () => {
  it('cancels a waiting job when it aborts', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    q.add('first');
    const controller = new AbortController();
    const handle = q.add('second', { signal: controller.signal });
    await flushMicrotasks();
    controller.abort('user left');
    expect(handle.status).toBe('cancelled');
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('user left');
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(gate.order).toEqual(['first']);
  });

  it('aborts a running job’s own signal when it aborts', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const controller = new AbortController();
    const handle = worker.bindQueue().add('x', { signal: controller.signal });
    await flushMicrotasks();
    controller.abort();
    expect(handle.status).toBe('cancelled');
    expect(gate.started[0]?.job.signal.aborted).toBe(true);
    gate.finishAll();
    await worker.waitUntilIdle();
  });

  it('an already-aborted signal still returns a handle, which is cancelled and never runs', async () => {
    const ran: string[] = [];
    const worker = new Worker((job: Job<string>) => void ran.push(job.data));
    const q = worker.bindQueue();
    const cancelledEvents: string[] = [];
    worker.on('cancelled', (job) => cancelledEvents.push(job.data));
    const handle = q.add('x', { signal: AbortSignal.abort('too late') });
    expect(handle.status).toBe('cancelled');
    expect(q.length).toBe(0);
    expect(worker.numPending).toBe(0);
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('too late');
    await worker.waitUntilIdle();
    expect(ran).toEqual([]);
    expect(cancelledEvents).toEqual(['x']);
  });

  it('aborting after the job settled changes nothing', async () => {
    const worker = new Worker((job: Job<number>) => job.data);
    const controller = new AbortController();
    const handle = worker.bindQueue().add(5, { signal: controller.signal });
    expect(await handle.result()).toBe(5);
    controller.abort();
    expect(handle.status).toBe('succeeded');
  });
});

describe('every handle settles exactly once', () => {
  it('whether it succeeds, fails, is cancelled waiting or running, or is purged', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 3 });
    const q = worker.bindQueue();
    const outcomes = new Map<string, string[]>();
    const note = (id: string, what: string) => outcomes.set(id, [...(outcomes.get(id) ?? []), what]);
    worker.on('completed', (job) => note(job.id, 'completed'));
    worker.on('failed', (job) => note(job.id, 'failed'));
    worker.on('cancelled', (job) => note(job.id, 'cancelled'));

    const handles: JobHandle<unknown>[] = [];
    const settledCalls = new Map<string, number>();
    const add = (data: string) => {
      const handle = q.add(data, { id: data });
      handles.push(handle);
      void handle.settled().then(() => settledCalls.set(data, (settledCalls.get(data) ?? 0) + 1));
      handle.result().catch(() => undefined);
      return handle;
    };
    add('succeeds');
    add('fails');
    const cancelledRunning = add('cancelled-running');
    const cancelledWaiting = add('cancelled-waiting');
    add('purged-1');
    add('purged-2');
    await flushMicrotasks();
    expect(gate.order).toEqual(['succeeds', 'fails', 'cancelled-running']);

    cancelledWaiting.cancel();
    cancelledRunning.cancel();
    expect(q.purge()).toBe(2);
    expect(cancelledWaiting.cancel()).toBe(false);
    gate.started[0]?.finish('ok');
    gate.started[1]?.fail(new Error('bad'));
    gate.started[2]?.fail(new Error('after cancel')); // the handler of a cancelled job still settles later
    await worker.waitUntilIdle();
    await nextMacrotask();

    expect(Object.fromEntries(outcomes)).toEqual({
      succeeds: ['completed'],
      fails: ['failed'],
      'cancelled-running': ['cancelled'],
      'cancelled-waiting': ['cancelled'],
      'purged-1': ['cancelled'],
      'purged-2': ['cancelled'],
    });
    expect([...settledCalls.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    expect(handles.map((h) => h.status)).toEqual(['succeeded', 'failed', 'cancelled', 'cancelled', 'cancelled', 'cancelled']);
    for (const handle of handles) expect(handle.cancel()).toBe(false);
  });

  it('a failed or cancelled job whose handle nobody awaited raises no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const gate = new Gate<string>();
      const worker = new Worker(gate.handler, { concurrency: 5 });
      const q = worker.bindQueue();
      q.add('rejects');
      const cancelledRunning = q.add('rejects-after-cancel');
      void q.add('settled-only').settled();
      q.add('waiting-1').cancel();
      q.add('waiting-2', { delay: 60_000 }).cancel();
      q.add('fails-later');
      q.add('aborted', { signal: AbortSignal.abort() });
      await flushMicrotasks();
      expect(gate.order).toEqual(['rejects', 'rejects-after-cancel', 'settled-only', 'fails-later']);
      gate.started[0]?.fail(new Error('nobody listens'));
      cancelledRunning.cancel();
      gate.started[1]?.fail(new Error('late'));
      gate.started[2]?.fail(new Error('settled() was asked'));
      const purgeable = q.add('purged-2');
      expect(q.purge()).toBe(1);
      expect(purgeable.status).toBe('cancelled');
      const sync = new Worker((job: Job<number>) => {
        if (job.data > 0) throw new Error('sync throw');
      });
      sync.bindQueue().add(1);
      const fn = new Worker<number>();
      fn.bindQueue().add(() => {
        throw new Error('the task throws');
      });
      await sync.waitUntilIdle();
      await fn.waitUntilIdle();
      for (const s of gate.open) s.fail(new Error('rest'));
      await worker.waitUntilIdle();
      for (let i = 0; i < 5; i++) await nextMacrotask();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('handlers that return a thenable other than a native promise', () => {
  /** Thenables that break the Promises/A+ rules in the ways a hand-written one can. */
  const misbehaving: Record<string, (value: string) => PromiseLike<string>> = {
    'resolves twice': (value) => ({ then: (ok) => (ok?.(value as never), ok?.('second' as never)) as never }),
    'resolves, then rejects': (value) => ({ then: (ok, fail) => (ok?.(value as never), fail?.(new Error('late'))) as never }),
    'resolves, then throws': (value) => ({
      then: (ok) => {
        ok?.(value as never);
        throw new Error('thrown after resolving');
      },
    }),
    'resolves later, twice': (value) => ({
      then: (ok) => void setTimeout(() => (ok?.(value as never), ok?.('second' as never)), 0) as never,
    }),
    'is a native promise with a then of its own that calls back twice, later': (value) => {
      const promise = Promise.resolve(value);
      promise.then = ((ok: (v: string) => void) => void setTimeout(() => (ok(value), ok('second')), 0)) as never;
      return promise;
    },
    'is a Promise subclass whose then calls back twice': (value) => {
      class Twice<V> extends Promise<V> {
        override then<A = V, B = never>(ok?: ((v: V) => A | PromiseLike<A>) | null): Promise<A | B> {
          setTimeout(() => (ok?.(value as V), ok?.('second' as V)), 0);
          return Promise.resolve() as Promise<A | B>;
        }
      }
      return new Twice<string>(() => {});
    },
  };

  it.each(Object.keys(misbehaving))('%s: the job settles once, with the first outcome, and the worker goes on', async (name) => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const make = misbehaving[name] as (value: string) => PromiseLike<string>;
      const events: string[] = [];
      const worker = new Worker((job: Job<string>) => (job.data.startsWith('odd') ? make(job.data) : Promise.resolve(job.data)), {
        concurrency: 2,
      });
      worker.on('completed', (job) => events.push(`completed ${job.data}`));
      worker.on('failed', (job) => events.push(`failed ${job.data}`));
      worker.on('error', (error) => events.push(`error ${String(error)}`));
      const q = worker.bindQueue();
      const handles = ['odd-1', 'plain-1', 'odd-2', 'plain-2', 'plain-3'].map((data) => q.add(data));
      await worker.waitUntilIdle();
      for (let i = 0; i < 3; i++) await nextMacrotask();
      expect(await Promise.all(handles.map((h) => h.result()))).toEqual(['odd-1', 'plain-1', 'odd-2', 'plain-2', 'plain-3']);
      expect(handles.map((h) => h.status)).toEqual(Array(5).fill('succeeded'));
      expect(events.sort()).toEqual(['completed odd-1', 'completed odd-2', 'completed plain-1', 'completed plain-2', 'completed plain-3']);
      expect(worker.health().status).toBe('healthy');
      expect(worker.numProcessing).toBe(0);
      expect(worker.stats().counters).toMatchObject({ started: 5, succeeded: 5, failed: 0 });
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a thenable whose `then` getter throws fails that job', async () => {
    const worker = new Worker((job: Job<string>) =>
      job.data === 'bad'
        ? Object.defineProperty({}, 'then', {
            get() {
              throw new Error('no then for you');
            },
          })
        : job.data,
    );
    const q = worker.bindQueue();
    const bad = q.add('bad');
    const good = q.add('good');
    await expect(bad.result()).rejects.toThrow('no then for you');
    await expect(good.result()).resolves.toBe('good');
  });
});

describe('addAll', () => {
  it('returns a group: handles in add order, result() in add order whatever the finish order', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 3 });
    const q = worker.bindQueue();
    const group = q.addAll(['a', 'b', 'c']);
    expect(group.handles.map((h) => h.status)).toEqual(['waiting', 'waiting', 'waiting']);
    await flushMicrotasks();
    gate.started[2]?.finish('C');
    gate.started[0]?.finish('A');
    gate.started[1]?.finish('B');
    expect(await group.result()).toEqual(['A', 'B', 'C']);
    await group.settled();
  });

  it('result() rejects with the first error; settled() waits for every job and never rejects', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 3 });
    const group = worker.bindQueue().addAll([1, 2, 3]);
    await flushMicrotasks();
    const boom = new Error('two failed');
    gate.started[1]?.fail(boom);
    await expect(group.result()).rejects.toBe(boom);
    let settled = false;
    void group.settled().then(() => (settled = true));
    await nextMacrotask();
    expect(settled).toBe(false);
    gate.finishAll();
    await nextMacrotask();
    expect(settled).toBe(true);
  });

  it('is all or nothing at capacity, and applies the options to each job', async () => {
    vi.useFakeTimers();
    const worker = new Worker((job: Job<number>) => job.data, { autoRun: false });
    const q = worker.bindQueue({ capacity: 3 });
    q.add(0);
    expect(() => q.addAll([1, 2, 3])).toThrow(QueueFullError);
    expect(q.length).toBe(1);
    const group = q.addAll([1, 2], { delay: 50 });
    expect(group.handles.map((h) => h.status)).toEqual(['delayed', 'delayed']);
    expect(q.length).toBe(3);
  });
});

describe('addAll of a sparse array', () => {
  it('a hole is a job whose data is undefined, as `for...of` reads it: one handle per index', async () => {
    const worker = new Worker((job: Job<number | undefined>) => job.data ?? 'hole');
    const q = worker.bindQueue();
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    const group = q.addAll([1, , 3]);
    expect(group.handles).toHaveLength(3);
    expect(group.handles.every((handle) => handle !== undefined)).toBe(true);
    expect(q.length).toBe(3);
    expect(await group.result()).toEqual([1, 'hole', 3]);
    await group.settled();
  });

  it('with a signal and keys too: every index gets its job, or none does', async () => {
    const worker = new Worker((job: Job<string | undefined>) => job.data, { autoRun: false });
    const q = worker.bindQueue({ keys: { by: (data: string | undefined) => data ?? 'none' } });
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    const group = q.addAll(['x', , 'y'], { signal: new AbortController().signal });
    expect(group.handles.map((handle) => handle.status)).toEqual(['waiting', 'waiting', 'waiting']);
    expect(q.keyStats('none')?.waiting).toBe(1);
    worker.start();
    expect(await group.result()).toEqual(['x', undefined, 'y']);
  });
});

describe('addAll: the group of a big or mixed batch', () => {
  it('settled() and result() of 2,100,000 jobs resolve (Promise.all over them throws a RangeError)', async () => {
    const count = 2_100_000;
    const worker = new Worker((job: Job<number>) => job.data * 2, { concurrency: Infinity, autoRun: false });
    const data = new Array<number>(count);
    for (let i = 0; i < count; i++) data[i] = i;
    const group = worker.bindQueue().addAll(data);
    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        (value) => ({ value }),
        (error: unknown) => ({ error: String(error) }),
      );
    const settled = outcome(group.settled()); // asked while every job waits
    // Checked before any job runs: after Promise.all gave up on so many, their settling spun for minutes.
    expect(await Promise.race([settled, nextMacrotask().then(() => 'pending')])).toBe('pending');
    worker.start();
    expect(await settled).toEqual({ value: undefined });
    expect(group.handles[count - 1]?.status).toBe('succeeded');
    const result = (await outcome(group.result())) as { value: number[] }; // asked once every job has settled
    expect(Object.keys(result)).toEqual(['value']);
    const values = result.value;
    expect(values).toHaveLength(count);
    let inOrder = true;
    for (let i = 0; i < count; i++) if (values[i] !== i * 2) inOrder = false;
    expect(inOrder).toBe(true);
  }, 60_000);

  it('result() rejects with the error of the job that failed first, whatever its place in the batch', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 4 });
    const group = worker.bindQueue().addAll([0, 1, 2, 3]);
    const result = group.result();
    result.catch(() => undefined);
    await flushMicrotasks();
    const third = new Error('third failed first');
    gate.started[2]?.fail(third);
    await flushMicrotasks();
    gate.started[0]?.fail(new Error('first failed later'));
    await expect(result).rejects.toBe(third);
  });

  it('result() asked after the jobs settled: the first failure in add order, as Promise.all would give', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 3 });
    const group = worker.bindQueue().addAll([0, 1, 2]);
    await flushMicrotasks();
    gate.started[2]?.fail(new Error('two'));
    gate.started[1]?.fail(new Error('one'));
    gate.started[0]?.finish(0);
    await group.settled();
    await expect(group.result()).rejects.toThrow('one');
  });

  it('result() rejects with the CancelledError of a cancelled job; settled() still waits for the others', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 1 });
    const group = worker.bindQueue().addAll([0, 1]);
    await flushMicrotasks();
    group.handles[1]?.cancel('not needed');
    await expect(group.result()).rejects.toBeInstanceOf(CancelledError);
    let settled = false;
    void group.settled().then(() => (settled = true));
    await flushMicrotasks();
    expect(settled).toBe(false);
    gate.started[0]?.finish(0);
    await flushMicrotasks();
    expect(settled).toBe(true);
  });

  it('result() and settled() give the same promise each call, and an empty batch resolves at once', async () => {
    const worker = new Worker((job: Job<number>) => job.data, { autoRun: false });
    const group = worker.bindQueue().addAll([1, 2]);
    expect(group.result()).toBe(group.result());
    expect(group.settled()).toBe(group.settled());
    worker.start();
    await expect(group.result()).resolves.toEqual([1, 2]);
    const empty = worker.bindQueue().addAll([]);
    await expect(empty.result()).resolves.toEqual([]);
    await expect(empty.settled()).resolves.toBeUndefined();
  });

  it('a failed batch whose result() nobody asked for raises no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const worker = new Worker(() => {
        throw new Error('boom');
      });
      const group = worker.bindQueue().addAll([1, 2, 3]);
      await group.settled();
      await nextMacrotask();
      expect(group.handles.map((h) => h.status)).toEqual(['failed', 'failed', 'failed']);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('addAll into a source without room for the whole batch', () => {
  function refusal(fn: () => unknown): QueueFullError {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(QueueFullError);
      return error as QueueFullError;
    }
    throw new Error('nothing was thrown');
  }

  it('says it lacks room for the batch and how many places are free, not that the source is full', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue({ name: 'batch', capacity: 3 });
    q.add(0);
    const error = refusal(() => q.addAll([1, 2, 3]));
    expect(error.message).toBe(
      'qmux: source "batch" lacks room for 3 jobs (2 free, capacity 3); add fewer, or await onSizeLessThan(1) before adding them',
    );
    expect([error.source, error.capacity, error.requested, error.free]).toEqual(['batch', 3, 3, 2]);
    const pq = worker.bindPriorityQueue({ name: 'ranked', capacity: 2 });
    pq.add(0, 0);
    expect(
      refusal(() =>
        pq.addAll([
          { data: 1, priority: 0 },
          { data: 2, priority: 1 },
        ]),
      ).message,
    ).toContain('lacks room for 2 jobs (1 free');
    expect([q.length, pq.length]).toEqual([1, 1]);
  });

  it('says when a batch is larger than the capacity, which no wait can fix', () => {
    const q = new Worker(() => undefined, { autoRun: false }).bindQueue({ name: 'batch', capacity: 3 });
    expect(refusal(() => q.addAll([1, 2, 3, 4])).message).toBe(
      'qmux: source "batch" lacks room for 4 jobs (3 free, capacity 3); a batch larger than the capacity never fits: add it in parts',
    );
  });

  it('a single add, or a batch of one, into a full source still says it is full', () => {
    const q = new Worker(() => undefined, { autoRun: false }).bindQueue({ name: 'batch', capacity: 1 });
    q.add(0);
    const single = refusal(() => q.add(1));
    expect(single.message).toBe('qmux: source "batch" is full (capacity 1); use tryAdd(), or await onSizeLessThan() before adding');
    expect([single.requested, single.free]).toEqual([1, 0]);
    expect(refusal(() => q.addAll([1])).message).toBe(single.message);
  });

  it('an empty batch fits even a source that a retry took past its capacity', async () => {
    vi.useFakeTimers();
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { retry: { attempts: 2, backoff: { type: 'fixed', delay: 1000 } } });
    const q = worker.bindQueue({ capacity: 1 });
    q.add(0);
    await flushMicrotasks();
    q.add(1, { delay: 5000 }); // full now, and nothing due to take the slot
    gate.started[0]?.fail(new Error('again'));
    await flushMicrotasks();
    expect(q.length).toBe(2); // the retry re-entered at capacity
    expect(q.addAll([]).handles).toEqual([]);
    q.purge();
  });
});

describe('capacity, tryAdd, close', () => {
  it('add throws QueueFullError at capacity, counting delayed jobs too; tryAdd returns undefined', () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue({ name: 'small', capacity: 2 });
    q.add(1);
    q.add(2, { delay: 60_000 });
    let thrown: unknown;
    try {
      q.add(3);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(QueueFullError);
    expect(thrown).toBeInstanceOf(QmuxError);
    expect((thrown as QueueFullError).source).toBe('small');
    expect((thrown as QueueFullError).capacity).toBe(2);
    expect((thrown as Error).message).toContain('small');
    expect(q.tryAdd(3)).toBeUndefined();
    expect(q.length).toBe(2);
    expect(worker.numPending).toBe(2);
    q.purge();
  });

  it('makes room as jobs start, not only as they finish', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue({ capacity: 1 });
    q.add(1);
    await flushMicrotasks(); // 1 runs, so nothing waits
    expect(q.tryAdd(2)).toBeDefined();
    expect(q.tryAdd(3)).toBeUndefined();
    gate.finishAll();
    await flushMicrotasks();
    gate.finishAll();
    await worker.waitUntilIdle();
  });

  it('close() rejects new adds with QueueClosedError, and jobs already queued still run', async () => {
    const ran: number[] = [];
    const worker = new Worker((job: Job<number>) => void ran.push(job.data), { autoRun: false });
    const q = worker.bindQueue({ name: 'closing' });
    q.add(1);
    q.add(2);
    q.close();
    expect(q.closed).toBe(true);
    expect(() => q.add(3)).toThrow(QueueClosedError);
    expect(() => q.addAll([3])).toThrow(QueueClosedError);
    expect(q.tryAdd(3)).toBeUndefined();
    let thrown: unknown;
    try {
      q.add(4);
    } catch (error) {
      thrown = error;
    }
    expect((thrown as QueueClosedError).source).toBe('closing');
    worker.start();
    await worker.waitUntilIdle();
    expect(ran).toEqual([1, 2]);
  });

  it('tryAdd returns a working handle when there is room', async () => {
    const worker = new Worker((job: Job<number>) => job.data + 1);
    const handle = worker.bindQueue().tryAdd(1);
    expect(handle).toBeDefined();
    expect(await handle?.result()).toBe(2);
  });
});

describe('onSizeLessThan', () => {
  it('resolves at once when the queue is already below n', async () => {
    const worker = new Worker(() => undefined, { autoRun: false });
    const q = worker.bindQueue();
    q.add(1);
    await q.onSizeLessThan(2);
  });

  it('waits until jobs start (or are removed) and fewer than n wait', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { autoRun: false });
    const q = worker.bindQueue();
    const handles = [1, 2, 3, 4].map((i) => q.add(i));
    let below3 = false;
    let below2 = false;
    void q.onSizeLessThan(3).then(() => (below3 = true));
    void q.onSizeLessThan(2).then(() => (below2 = true));
    await nextMacrotask();
    expect([below3, below2]).toEqual([false, false]);
    handles[3]?.cancel(); // 3 wait
    await nextMacrotask();
    expect([below3, below2]).toEqual([false, false]);
    worker.start(); // 1 starts: 2 wait
    await nextMacrotask();
    expect([below3, below2]).toEqual([true, false]);
    q.purge(); // 0 wait
    await nextMacrotask();
    expect(below2).toBe(true);
    gate.finishAll();
    await worker.waitUntilIdle();
  });

  it('gives a producer back-pressure: the queue never holds more than n - 1 waiting', async () => {
    let maxWaiting = 0;
    const worker = new Worker(async (job: Job<number>) => {
      await Promise.resolve();
      return job.data;
    });
    const q = worker.bindQueue();
    for (let i = 0; i < 50; i++) {
      await q.onSizeLessThan(5);
      q.add(i);
      maxWaiting = Math.max(maxWaiting, q.length);
    }
    await worker.waitUntilIdle();
    expect(maxWaiting).toBeLessThanOrEqual(5);
  });
});

describe('purge()', () => {
  it('removes every waiting job, due or delayed, and leaves running jobs alone', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    const cancelled: string[] = [];
    worker.on('cancelled', (job) => cancelled.push(job.data));
    const running = q.add('running');
    const due = q.add('due');
    const delayed = q.add('delayed', { delay: 60_000 });
    await flushMicrotasks();
    expect(q.purge()).toBe(2);
    expect(q.length).toBe(0);
    expect(worker.numPending).toBe(0);
    expect([running.status, due.status, delayed.status]).toEqual(['running', 'cancelled', 'cancelled']);
    await expect(due.result()).rejects.toBeInstanceOf(CancelledError);
    await expect(delayed.result()).rejects.toBeInstanceOf(CancelledError);
    expect(cancelled).toEqual(['due', 'delayed']);
    expect(q.purge()).toBe(0);
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(running.status).toBe('succeeded');
    expect(gate.order).toEqual(['running']);
  });

  it('leaves the queue usable', async () => {
    const worker = new Worker((job: Job<number>) => job.data, { autoRun: false });
    const q = worker.bindQueue();
    q.add(1);
    q.purge();
    const handle = q.add(2);
    worker.start();
    expect(await handle.result()).toBe(2);
  });
});

describe('function workers', () => {
  it('call each job’s function and give back its result, respecting concurrency', async () => {
    const worker = new Worker<number>({ concurrency: 2 });
    const q = worker.bindQueue();
    let running = 0;
    let max = 0;
    const task =
      (n: number): Task<number> =>
      async () => {
        running++;
        max = Math.max(max, running);
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        return n * n;
      };
    const handles = [1, 2, 3, 4, 5].map((n) => q.add(task(n)));
    const sync = q.add(() => 7);
    expect(await Promise.all(handles.map((h) => h.result()))).toEqual([1, 4, 9, 16, 25]);
    expect(await sync.result()).toBe(7);
    expect(max).toBe(2);
    expect(worker.concurrency).toBe(2);
  });

  it('refuse data that is not a function at the add, synchronously, on every kind of add, adding nothing', async () => {
    const worker = new Worker<number>();
    const q = worker.bindQueue();
    const pq = worker.bindPriorityQueue();
    const topic = new Topic<Task<number>>();
    const other = new Worker<Task<number>>(() => 0);
    const delivered = other.bindQueue();
    other.subscribe(topic);
    worker.subscribe(topic);
    const notTask = 42 as unknown as Task<number>;
    const message = "qmux: a function worker's job data must be a function, got 42";
    expect(() => q.add(notTask)).toThrow(message);
    expect(() => q.tryAdd(notTask)).toThrow(message);
    expect(() => q.addAll([() => 1, notTask])).toThrow(message); // all or nothing: the good one is not added either
    expect(() => pq.add(notTask, 0)).toThrow(message);
    expect(() => pq.tryAdd(notTask, 0)).toThrow(message);
    expect(() => pq.addAll([{ data: notTask, priority: 0 }])).toThrow(message);
    // Before anything is delivered, to the other worker's subscription too.
    expect(() => topic.publish(notTask)).toThrow(message);
    expect(() => topic.tryPublish(notTask)).toThrow(message);
    expect([q.length, pq.length, delivered.length, worker.stats().counters.added, other.stats().counters.added]).toEqual([0, 0, 0, 0, 0]);
    // A subscription where the publish's id is in use gets nothing new: there is nothing to refuse
    // (the jobs of the first publish have not started yet: this all runs in one turn).
    const held = topic.publish((() => 1) as Task<number>, { id: 'once' });
    expect(topic.publish(notTask, { id: 'once' })).toEqual(held);
    // Bad data comes before room: a full queue still says what is wrong with the data.
    const full = worker.bindQueue({ capacity: 1 });
    full.add(() => new Promise<number>(() => undefined));
    expect(() => full.tryAdd(notTask)).toThrow(message);
    // The worker goes on.
    expect(await q.add(() => 1).result()).toBe(1);
  });

  it('fail a job whose function throws, with that error', async () => {
    const worker = new Worker<never>();
    const boom = new Error('inside');
    const handle = worker.bindQueue().add(() => {
      throw boom;
    });
    await expect(handle.result()).rejects.toBe(boom);
  });
});
