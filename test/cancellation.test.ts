import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CancelledError, Topic, Worker, type Job, type JobHandle, type WorkerOptions } from '../src/index.js';
import { deferred, flushMicrotasks, type Deferred } from './helpers.js';

/**
 * Cancellation (SPEC 5): `handle.cancel(reason)` and the `signal` add option, for waiting, delayed,
 * running and retry-waiting jobs. Fake timers throughout.
 */

interface Run {
  data: string;
  attempt: number;
  signal: AbortSignal;
  /** Settles this attempt's handler. */
  finish: Deferred<string>;
}

let runs: Run[] = [];

/** A handler whose attempts settle only when the test says so. */
function handler(job: Job<string>): Promise<string> {
  const finish = deferred<string>();
  runs.push({ data: job.data, attempt: job.attempt, signal: job.signal, finish });
  return finish.promise;
}

function makeWorker(options?: WorkerOptions): Worker<string, string> {
  return new Worker<string, string>(handler, options);
}

function runOf(data: string, attempt = 1): Run {
  const run = runs.find((r) => r.data === data && r.attempt === attempt);
  if (run === undefined) throw new Error(`${data} attempt ${attempt} has not started`);
  return run;
}

/** Every settling event of a worker, in order. */
function recordEvents(worker: Worker<string, string>): string[] {
  const events: string[] = [];
  worker.on('completed', (job) => events.push(`completed ${job.data}`));
  worker.on('failed', (job) => events.push(`failed ${job.data}`));
  worker.on('dead', (job) => events.push(`dead ${job.data}`));
  worker.on('retrying', (job) => events.push(`retrying ${job.data}`));
  worker.on('cancelled', (job) => events.push(`cancelled ${job.data}`));
  return events;
}

async function rejection(handle: JobHandle<unknown>): Promise<unknown> {
  return handle.result().then(
    () => {
      throw new Error('expected the job to reject');
    },
    (error: unknown) => error,
  );
}

beforeEach(() => {
  vi.useFakeTimers();
  runs = [];
});

afterEach(() => {
  vi.useRealTimers();
});

describe('a waiting job', () => {
  it('is removed by cancel(reason); its handle rejects with a CancelledError that keeps the reason', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    queue.add('first');
    const handle = queue.add('second');
    await flushMicrotasks();
    expect(handle.status).toBe('waiting');
    const reason = { why: 'no longer needed' };
    expect(handle.cancel(reason)).toBe(true);
    expect(handle.status).toBe('cancelled');
    expect(queue.length).toBe(0);
    expect(worker.numPending).toBe(0);
    const error = await rejection(handle);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe(reason);
    runOf('first').finish.resolve('ok');
    await worker.waitUntilIdle();
    expect(runs.map((r) => r.data)).toEqual(['first']);
  });

  it('cancel() without a reason rejects with a CancelledError whose reason is undefined', async () => {
    const worker = makeWorker({ autoRun: false });
    const handle = worker.bindQueue().add('a');
    handle.cancel();
    const error = await rejection(handle);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBeUndefined();
  });

  it('emits `cancelled` once, and a second cancel returns false and changes nothing', async () => {
    const worker = makeWorker({ autoRun: false });
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add('a');
    expect(handle.cancel('one')).toBe(true);
    expect(handle.cancel('two')).toBe(false);
    expect(events).toEqual(['cancelled a']);
    expect(((await rejection(handle)) as CancelledError).reason).toBe('one');
    worker.start();
    await worker.waitUntilIdle();
    expect(runs).toEqual([]);
  });

  it('frees its place in a queue at capacity', async () => {
    const worker = makeWorker({ autoRun: false });
    const queue = worker.bindQueue({ capacity: 1 });
    const handle = queue.add('a');
    expect(queue.tryAdd('b')).toBeUndefined();
    handle.cancel();
    expect(queue.tryAdd('b')).toBeDefined();
  });

  it('leaves the other jobs of its priority queue in order', async () => {
    const worker = makeWorker({ autoRun: false });
    const pq = worker.bindPriorityQueue();
    pq.add('p3', 3);
    const p1 = pq.add('p1', 1);
    pq.add('p2', 2);
    pq.add('p0', 0);
    p1.cancel();
    worker.start();
    for (let i = 0; i < 3; i++) {
      await flushMicrotasks();
      runs[i]?.finish.resolve('ok');
    }
    await worker.waitUntilIdle();
    expect(runs.map((r) => r.data)).toEqual(['p0', 'p2', 'p3']);
  });

  it("is cancelled when its `signal` aborts, with the signal's reason", async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    queue.add('first');
    const controller = new AbortController();
    const handle = queue.add('second', { signal: controller.signal });
    await flushMicrotasks();
    controller.abort('user left');
    expect(handle.status).toBe('cancelled');
    expect(queue.length).toBe(0);
    const error = await rejection(handle);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('user left');
  });

  it("a signal aborted without a reason cancels with the signal's own AbortError as the reason", async () => {
    const worker = makeWorker({ autoRun: false });
    const controller = new AbortController();
    const handle = worker.bindQueue().add('a', { signal: controller.signal });
    controller.abort();
    const error = await rejection(handle);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe(controller.signal.reason);
    expect((error as CancelledError).reason).toMatchObject({ name: 'AbortError' });
  });

  it('an already-aborted signal still returns a handle, already cancelled, and nothing is queued', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    const reason = new Error('too late');
    const handle = queue.add('a', { signal: AbortSignal.abort(reason) });
    expect(handle.status).toBe('cancelled');
    expect(queue.length).toBe(0);
    expect(worker.numPending).toBe(0);
    const error = await rejection(handle);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe(reason);
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toEqual([]);
  });

  it('a handle nobody asked for a result raises no unhandled rejection when cancelled', async () => {
    const escaped: unknown[] = [];
    const onEscape = (error: unknown): void => void escaped.push(error);
    process.on('unhandledRejection', onEscape);
    try {
      const worker = makeWorker({ autoRun: false });
      const queue = worker.bindQueue();
      queue.add('a').cancel('x');
      queue.add('b', { signal: AbortSignal.abort() });
      queue.add('c', { delay: 100 }).cancel();
      vi.useRealTimers();
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(escaped).toEqual([]);
    } finally {
      process.off('unhandledRejection', onEscape);
    }
  });
});

describe('a delayed job', () => {
  it('is removed by cancel; it never runs and the worker keeps no timer for it', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    const handle = queue.add('later', { delay: 1000 });
    await flushMicrotasks();
    expect(handle.status).toBe('delayed');
    handle.cancel('changed my mind');
    expect(handle.status).toBe('cancelled');
    expect(queue.length).toBe(0);
    expect(worker.numPending).toBe(0);
    expect(((await rejection(handle)) as CancelledError).reason).toBe('changed my mind');
    await worker.waitUntilIdle();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(2000);
    expect(runs).toEqual([]);
  });

  it('is cancelled when its signal aborts before it comes due', async () => {
    const worker = makeWorker();
    const controller = new AbortController();
    const handle = worker.bindQueue().add('later', { delay: 1000, signal: controller.signal });
    await vi.advanceTimersByTimeAsync(500);
    controller.abort('stop');
    expect(handle.status).toBe('cancelled');
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toEqual([]);
    expect(((await rejection(handle)) as CancelledError).reason).toBe('stop');
  });

  it('cancelling one delayed job does not lose the wake-up of another', async () => {
    const worker = makeWorker();
    const queue = worker.bindQueue();
    const first = queue.add('first', { delay: 100 });
    queue.add('second', { delay: 200 });
    await flushMicrotasks();
    first.cancel();
    await vi.advanceTimersByTimeAsync(200);
    expect(runs.map((r) => r.data)).toEqual(['second']);
  });
});

describe('a running job', () => {
  it('settles `cancelled` at once, its signal aborts with the CancelledError, and the slot stays taken', async () => {
    const worker = makeWorker();
    const events = recordEvents(worker);
    const queue = worker.bindQueue();
    const handle = queue.add('a');
    const next = queue.add('b');
    await flushMicrotasks();
    const run = runOf('a');
    const reason = new Error('user pressed stop');
    expect(handle.cancel(reason)).toBe(true);
    expect(handle.status).toBe('cancelled');
    const error = await rejection(handle);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe(reason);
    expect(run.signal.aborted).toBe(true);
    expect(run.signal.reason).toBe(error);
    // The handler has not returned: its slot is still in use, nothing else starts.
    await vi.advanceTimersByTimeAsync(1000);
    expect(worker.numProcessing).toBe(1);
    expect(next.status).toBe('waiting');
    expect(runs.map((r) => r.data)).toEqual(['a']);
    run.finish.resolve('done anyway');
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(1);
    expect(runs.map((r) => r.data)).toEqual(['a', 'b']);
    expect(handle.status).toBe('cancelled');
    expect(events).toEqual(['cancelled a']);
  });

  it('a handler that rejects after the cancel causes no `failed`, no retry and no dead letter', async () => {
    const worker = makeWorker({ retry: { attempts: 3 } });
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add('a');
    await flushMicrotasks();
    handle.cancel();
    runOf('a').finish.reject(runOf('a').signal.reason);
    await vi.advanceTimersByTimeAsync(1000);
    expect(events).toEqual(['cancelled a']);
    expect(runs).toHaveLength(1);
    expect(worker.deadLetters).toEqual([]);
    expect(handle.status).toBe('cancelled');
    expect(worker.numProcessing).toBe(0);
    expect(worker.status).toBe('idle');
  });

  it('is cancelled by its add signal too', async () => {
    const worker = makeWorker();
    const events = recordEvents(worker);
    const controller = new AbortController();
    const handle = worker.bindQueue().add('a', { signal: controller.signal });
    await flushMicrotasks();
    const run = runOf('a');
    controller.abort('bye');
    expect(handle.status).toBe('cancelled');
    expect(run.signal.aborted).toBe(true);
    expect(run.signal.reason).toBeInstanceOf(CancelledError);
    expect((run.signal.reason as CancelledError).reason).toBe('bye');
    expect(worker.numProcessing).toBe(1);
    run.finish.resolve('late');
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(0);
    expect(events).toEqual(['cancelled a']);
  });

  it("waitUntilIdle waits for the cancelled job's handler to return", async () => {
    const worker = makeWorker();
    const handle = worker.bindQueue().add('a');
    await flushMicrotasks();
    handle.cancel();
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    await flushMicrotasks();
    expect(idle).toBe(false);
    runOf('a').finish.resolve('x');
    await flushMicrotasks();
    expect(idle).toBe(true);
  });

  it('cancel returns false once the job has settled, and aborting its signal later does nothing', async () => {
    const worker = makeWorker();
    const events = recordEvents(worker);
    const controller = new AbortController();
    const handle = worker.bindQueue().add('a', { signal: controller.signal });
    await flushMicrotasks();
    runOf('a').finish.resolve('done');
    await expect(handle.result()).resolves.toBe('done');
    expect(handle.cancel()).toBe(false);
    controller.abort();
    expect(handle.status).toBe('succeeded');
    expect(runOf('a').signal.aborted).toBe(false);
    expect(events).toEqual(['completed a']);
  });

  it('a job that timed out and waits for its handler before a retry is not retried once cancelled', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 3 } });
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add('a');
    await vi.advanceTimersByTimeAsync(100); // timed out; the handler ignores its signal
    expect(runOf('a').signal.aborted).toBe(true);
    expect(handle.cancel('enough')).toBe(true);
    expect(handle.status).toBe('cancelled');
    runOf('a').finish.resolve('late');
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toHaveLength(1);
    expect(events).toEqual(['cancelled a']);
    expect(((await rejection(handle)) as CancelledError).reason).toBe('enough');
  });
});

describe('a signal listener that cancels or aborts again while the job is being settled', () => {
  // A request-scoped controller is the job's `signal`, and the handler also aborts that controller
  // when the job's own signal aborts, so other work tied to the request stops too. The second
  // abort arrives while qmux is still settling the job: it must find the job settled.
  function chained(worker: Worker<string, string>, data: string): { handle: JobHandle<string>; request: AbortController } {
    const request = new AbortController();
    const handle = worker.bindQueue().add(data, { signal: request.signal });
    return { handle, request };
  }
  const forward = (request: AbortController) => (signal: AbortSignal) =>
    signal.addEventListener('abort', () => request.abort(signal.reason), { once: true });

  it('a timeout fails the job once: no `cancelled`, one `failed` and one dead letter', async () => {
    const worker = makeWorker({ timeout: 100 });
    const events = recordEvents(worker);
    const { handle, request } = chained(worker, 'a');
    await vi.advanceTimersByTimeAsync(0);
    forward(request)(runOf('a').signal);
    await vi.advanceTimersByTimeAsync(100);
    expect(request.signal.aborted).toBe(true);
    expect(handle.status).toBe('failed');
    expect((await rejection(handle)) as Error).toMatchObject({ name: 'TimeoutError' });
    expect(events).toEqual(['failed a', 'dead a']);
    expect(worker.deadLetters).toHaveLength(1);
    expect(worker.stats().counters).toMatchObject({ failed: 1, dead: 1, cancelled: 0 });
    runOf('a').finish.resolve('late');
    await vi.advanceTimersByTimeAsync(0);
    expect(handle.status).toBe('failed');
    expect(events).toEqual(['failed a', 'dead a']);
  });

  it('a timeout that will be retried: the re-entrant cancel wins, and there is no further attempt', async () => {
    const worker = makeWorker({ timeout: 100, retry: { attempts: 3 } });
    const events = recordEvents(worker);
    const { handle, request } = chained(worker, 'a');
    await vi.advanceTimersByTimeAsync(0);
    forward(request)(runOf('a').signal);
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.status).toBe('cancelled');
    runOf('a').finish.resolve('late');
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toHaveLength(1);
    expect(events).toEqual(['cancelled a']);
    expect(worker.stats().counters).toMatchObject({ retried: 0, failed: 0, cancelled: 1 });
  });

  it('cancel() emits `cancelled` once and counts one cancellation', async () => {
    const worker = makeWorker();
    const events = recordEvents(worker);
    const { handle, request } = chained(worker, 'a');
    await vi.advanceTimersByTimeAsync(0);
    forward(request)(runOf('a').signal);
    expect(handle.cancel('user')).toBe(true);
    expect(request.signal.aborted).toBe(true);
    expect(events).toEqual(['cancelled a']);
    expect(worker.stats().counters.cancelled).toBe(1);
    expect(((await rejection(handle)) as CancelledError).reason).toBe('user');
    runOf('a').finish.resolve('late');
    await worker.waitUntilIdle();
    expect(events).toEqual(['cancelled a']);
  });
});

describe('a job waiting for a retry', () => {
  it('is cancelled like a delayed job: no more attempts, no `failed`, no dead letter', async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 500 } } });
    const events = recordEvents(worker);
    const handle = worker.bindQueue().add('a');
    await flushMicrotasks();
    runOf('a').finish.reject(new Error('boom'));
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.status).toBe('delayed');
    expect(worker.numPending).toBe(1);
    expect(handle.cancel('give up')).toBe(true);
    expect(handle.status).toBe('cancelled');
    expect(worker.numPending).toBe(0);
    const error = await rejection(handle);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('give up');
    await worker.waitUntilIdle();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5000);
    expect(runs).toHaveLength(1);
    expect(handle.attempts).toBe(1);
    expect(events).toEqual(['retrying a', 'cancelled a']);
    expect(worker.deadLetters).toEqual([]);
  });

  it('can be cancelled from the `retrying` listener: no further attempt', async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 100 } } });
    const events = recordEvents(worker);
    worker.on('retrying', (job) => job.cancel('seen enough'));
    const handle = worker.bindQueue().add('a');
    await flushMicrotasks();
    runOf('a').finish.reject(new Error('boom'));
    await vi.advanceTimersByTimeAsync(1000);
    expect(handle.status).toBe('cancelled');
    expect(runs).toHaveLength(1);
    expect(events).toEqual(['retrying a', 'cancelled a']);
    expect(worker.numPending).toBe(0);
    expect(worker.status).toBe('idle');
  });

  it('is cancelled by its add signal while it waits for the retry', async () => {
    const worker = makeWorker({ retry: { attempts: 3, backoff: { type: 'fixed', delay: 500 } } });
    const controller = new AbortController();
    const handle = worker.bindQueue().add('a', { signal: controller.signal });
    await flushMicrotasks();
    runOf('a').finish.reject(new Error('boom'));
    await vi.advanceTimersByTimeAsync(100);
    expect(handle.status).toBe('delayed');
    controller.abort('signal');
    expect(handle.status).toBe('cancelled');
    await vi.advanceTimersByTimeAsync(5000);
    expect(runs).toHaveLength(1);
    expect(((await rejection(handle)) as CancelledError).reason).toBe('signal');
  });
});

describe('one signal shared by many jobs (addAll, publish)', () => {
  const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

  it('addAll of 50 jobs adds one abort listener, and Node warns of no listener leak', async () => {
    vi.useRealTimers();
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const controller = new AbortController();
      const worker = makeWorker({ autoRun: false });
      const group = worker.bindQueue().addAll(
        Array.from({ length: 50 }, (_, i) => `job ${i}`),
        { signal: controller.signal },
      );
      await new Promise<void>((resolve) => setImmediate(resolve)); // warnings are emitted on nextTick
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning').map(String)).toEqual([]);
      expect(listeners(controller.signal)).toBe(1);
      controller.abort('stop');
      expect(group.handles.every((handle) => handle.status === 'cancelled')).toBe(true);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('aborting cancels every job of the batch still waiting or running, with the reason, and removes the listener', async () => {
    const controller = new AbortController();
    const worker = makeWorker({ concurrency: 2 });
    const queue = worker.bindQueue();
    const group = queue.addAll(['a', 'b', 'c', 'd'], { signal: controller.signal });
    await flushMicrotasks();
    runOf('a').finish.resolve('A');
    await flushMicrotasks();
    expect(group.handles.map((h) => h.status)).toEqual(['succeeded', 'running', 'running', 'waiting']);
    controller.abort('user left');
    expect(group.handles.map((h) => h.status)).toEqual(['succeeded', 'cancelled', 'cancelled', 'cancelled']);
    expect([runOf('b').signal.aborted, runOf('c').signal.aborted]).toEqual([true, true]);
    expect(((await rejection(group.handles[3] as JobHandle<string>)) as CancelledError).reason).toBe('user left');
    expect(queue.length).toBe(0);
    expect(listeners(controller.signal)).toBe(0);
  });

  it('the listener is removed once every job of the batch has settled, also when one was cancelled by hand', async () => {
    const controller = new AbortController();
    const worker = makeWorker({ concurrency: 3 });
    const group = worker.bindQueue().addAll(['a', 'b', 'c'], { signal: controller.signal });
    await flushMicrotasks();
    expect(group.handles[1]?.cancel()).toBe(true);
    expect(listeners(controller.signal)).toBe(1); // a and c still follow it
    runOf('a').finish.resolve('A');
    await flushMicrotasks();
    expect(listeners(controller.signal)).toBe(1);
    runOf('c').finish.resolve('C');
    runOf('b').finish.resolve('B'); // its handler returns after the cancel
    await flushMicrotasks();
    expect(group.handles.map((h) => h.status)).toEqual(['succeeded', 'cancelled', 'succeeded']);
    expect(listeners(controller.signal)).toBe(0);
    controller.abort(); // changes nothing now
    expect(group.handles.map((h) => h.status)).toEqual(['succeeded', 'cancelled', 'succeeded']);
  });

  it('an already-aborted signal cancels the whole batch at once and adds no listener', () => {
    const worker = makeWorker({ autoRun: false });
    const signal = AbortSignal.abort('too late');
    const group = worker.bindQueue().addAll(['a', 'b'], { signal });
    expect(group.handles.map((h) => h.status)).toEqual(['cancelled', 'cancelled']);
    expect(listeners(signal)).toBe(0);
  });

  it('a signal given to single adds still gets one listener per job, each removed when its job settles', async () => {
    const controller = new AbortController();
    const worker = makeWorker();
    const queue = worker.bindQueue();
    const first = queue.add('a', { signal: controller.signal });
    queue.add('b', { signal: controller.signal });
    expect(listeners(controller.signal)).toBe(2);
    await flushMicrotasks();
    runOf('a').finish.resolve('A');
    await first.settled();
    expect(listeners(controller.signal)).toBe(1);
    await flushMicrotasks();
    controller.abort('x');
    expect(listeners(controller.signal)).toBe(0);
  });

  it('topic.publish to 20 subscriptions with a signal adds one listener; aborting cancels every delivery', async () => {
    const topic = new Topic<string>();
    const subscriptions = Array.from({ length: 20 }, () => makeWorker({ autoRun: false }).subscribe(topic));
    const controller = new AbortController();
    const handles = topic.publish('news', { signal: controller.signal });
    expect(handles).toHaveLength(20);
    expect(listeners(controller.signal)).toBe(1);
    controller.abort('retracted');
    expect(handles.every((handle) => handle.status === 'cancelled')).toBe(true);
    expect(subscriptions.map((sub) => sub.length)).toEqual(Array(20).fill(0));
    expect(listeners(controller.signal)).toBe(0);
  });

  it('topic.publish: the listener goes once every delivery has settled', async () => {
    const topic = new Topic<string>();
    const workers = [makeWorker(), makeWorker()];
    for (const worker of workers) worker.subscribe(topic);
    const controller = new AbortController();
    const handles = topic.publish('news', { signal: controller.signal });
    await flushMicrotasks();
    for (const run of runs) run.finish.resolve('done');
    await Promise.all(handles.map((handle) => handle.settled()));
    expect(handles.map((handle) => handle.status)).toEqual(['succeeded', 'succeeded']);
    expect(listeners(controller.signal)).toBe(0);
  });
});

describe('cancel(reason) with a reason String() cannot convert', () => {
  // Describing the reason must neither throw out of a transition half done nor stop the cancel.
  it('a waiting job: removed, settled and counted; its CancelledError keeps the reason; the worker runs on', async () => {
    const worker = new Worker(async (job: Job<string>) => job.data, { autoRun: false });
    const q = worker.bindQueue();
    const handle = q.add('a');
    const other = q.add('b');
    const outcome = handle.result().catch((error: unknown) => error);
    const reason = Object.create(null) as object; // querystring.parse() gives such objects
    expect(handle.cancel(reason)).toBe(true);
    const error = (await outcome) as CancelledError;
    expect(error).toBeInstanceOf(CancelledError);
    expect(error.reason).toBe(reason);
    expect(error.message).toBe('qmux: job cancelled: [object Object]');
    expect([handle.status, worker.numPending, q.length, worker.stats().counters.cancelled]).toEqual(['cancelled', 1, 1, 1]);
    worker.start();
    await expect(other.result()).resolves.toBe('b');
    expect(worker.status).toBe('idle');
  });

  it('a running job: its signal aborts and its handle settles cancelled, once', async () => {
    const release = deferred<string>();
    let signal: AbortSignal | undefined;
    const worker = new Worker(async (job: Job<string>) => {
      signal = job.signal;
      return release.promise;
    });
    const q = worker.bindQueue();
    const handle = q.add('a');
    const outcome = handle.result().catch((error: unknown) => error);
    await flushMicrotasks();
    const reason = {
      toString(): string {
        throw new Error('no string for you');
      },
    };
    expect(handle.cancel(reason)).toBe(true);
    expect(signal?.aborted).toBe(true);
    release.resolve('done');
    const error = (await outcome) as CancelledError;
    expect(error).toBeInstanceOf(CancelledError);
    expect(error.reason).toBe(reason);
    await worker.waitUntilIdle();
    expect(handle.status).toBe('cancelled');
    expect(worker.stats().counters.cancelled).toBe(1);
    expect(worker.stats().counters.succeeded).toBe(0);
  });
});

describe('an already-aborted signal on a full queue', () => {
  it('still returns a handle, already cancelled, from add, tryAdd, addAll and publish; the job never takes room; a closed queue still throws', async () => {
    const worker = new Worker(async (job: Job<string>) => job.data, { autoRun: false });
    const aborted = AbortSignal.abort('gone');
    const q = worker.bindQueue({ capacity: 1 });
    const pq = worker.bindPriorityQueue({ capacity: 1 });
    const keyed = worker.bindQueue({ keys: { by: () => 'k', capacity: 1 } });
    const topic = new Topic<string>();
    const subscription = worker.subscribe(topic, { capacity: 1 });
    q.add('in');
    pq.add('in', 1);
    keyed.add('in');
    topic.publish('in');
    const handles = [
      q.add('x', { signal: aborted }),
      q.tryAdd('x', { signal: aborted }),
      pq.add('x', 1, { signal: aborted }),
      pq.tryAdd('x', 1, { signal: aborted }),
      keyed.add('x', { signal: aborted }),
      ...q.addAll(['x', 'y'], { signal: aborted }).handles,
      ...topic.publish('x', { signal: aborted }),
      ...(topic.tryPublish('x', { signal: aborted }) ?? []),
    ];
    expect(handles.map((handle) => handle?.status)).toEqual(Array(handles.length).fill('cancelled'));
    expect([q.length, pq.length, keyed.length, subscription.length]).toEqual([1, 1, 1, 1]);
    const reasons = await Promise.all(handles.map((handle) => handle?.result().catch((error: CancelledError) => error.reason)));
    expect(reasons).toEqual(Array(handles.length).fill('gone'));
    expect(worker.stats().counters.cancelled).toBe(handles.length);
    // Without an aborted signal the queue is still full.
    expect(() => q.add('z')).toThrow(/full/);
    expect(q.tryAdd('z', { signal: new AbortController().signal })).toBeUndefined();
    q.close();
    expect(() => q.add('x', { signal: aborted })).toThrow(/closed/);
  });
});
