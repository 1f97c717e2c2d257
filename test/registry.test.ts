import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CancelledError, Registry, Worker, type Job, type ShutdownResult, type SourceView, type WorkerOptions } from '../src/index.js';
import { flushMicrotasks } from './helpers.js';

/**
 * The registry (SPEC 8): several workers by name, the worst health, and shutdown with a timeout.
 * Fake timers throughout.
 */

interface Task {
  name: string;
  /** Virtual ms the handler takes; it ignores its signal unless `honourSignal`. */
  ms: number;
  honourSignal?: boolean;
}

let signals = new Map<string, AbortSignal>();
let ended: string[] = [];

function handler(job: Job<Task>): Promise<string> {
  signals.set(job.data.name, job.signal);
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      ended.push(job.data.name);
      resolve(job.data.name);
    }, job.data.ms);
    if (job.data.honourSignal === true) {
      job.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        ended.push(job.data.name);
        reject(job.signal.reason);
      });
    }
  });
}

function makeWorker(name: string, options?: WorkerOptions): Worker<Task, string> {
  return new Worker<Task, string>(handler, { name, ...options });
}

/** A worker whose custom strategy breaks its contract at once: it halts on its first pick. */
function haltedWorker(name: string): Worker<Task, string> {
  const worker = makeWorker(name, {
    strategy: { name: 'Broken', create: () => ({ pick: () => undefined as unknown as SourceView }) },
  });
  worker.bindQueue().add({ name: `${name}-job`, ms: 1 });
  worker.bindQueue();
  return worker;
}

/** Tracks a promise's settlement without awaiting it. */
function track<T>(promise: Promise<T>): { done: boolean; value: T | undefined } {
  const state: { done: boolean; value: T | undefined } = { done: false, value: undefined };
  void promise.then((value) => {
    state.done = true;
    state.value = value;
  });
  return state;
}

beforeEach(() => {
  vi.useFakeTimers();
  signals = new Map();
  ended = [];
});

afterEach(() => {
  vi.useRealTimers();
});

describe('add, get, names', () => {
  it('finds workers by name and lists names in the order they were added', () => {
    const registry = new Registry();
    const mailer = makeWorker('mailer');
    const thumbs = makeWorker('thumbs');
    registry.add(mailer);
    registry.add(thumbs);
    expect(registry.get('mailer')).toBe(mailer);
    expect(registry.get('thumbs')).toBe(thumbs);
    expect(registry.get('nobody')).toBeUndefined();
    expect(registry.names()).toEqual(['mailer', 'thumbs']);
  });

  it('a duplicate name throws, naming it, and the first worker stays registered', () => {
    const registry = new Registry();
    const first = makeWorker('same');
    registry.add(first);
    expect(() => registry.add(makeWorker('same'))).toThrow(/same/);
    expect(registry.get('same')).toBe(first);
    expect(registry.names()).toEqual(['same']);
  });

  it('refuses a worker named "." or "..", which a URL path cannot name (the admin API names workers there)', () => {
    const registry = new Registry();
    for (const name of ['.', '..']) {
      expect(() => registry.add(makeWorker(name))).toThrow(TypeError);
      expect(() => registry.add(makeWorker(name))).toThrow(`a worker named "${name}" cannot be named in a URL path`);
    }
    registry.add(makeWorker('...'));
    registry.add(makeWorker('.hidden'));
    expect(registry.names()).toEqual(['...', '.hidden']);
  });

  it('adding the same worker twice throws too', () => {
    const registry = new Registry();
    const worker = makeWorker('w');
    registry.add(worker);
    expect(() => registry.add(worker)).toThrow();
  });

  it('refuses something that is not a worker', () => {
    const registry = new Registry();
    expect(() => registry.add({ name: 'fake' } as unknown as Worker)).toThrow(TypeError);
    expect(registry.names()).toEqual([]);
  });

  it('workers with generated names can be registered side by side', () => {
    const registry = new Registry();
    registry.add(new Worker(() => {}));
    registry.add(new Worker(() => {}));
    expect(new Set(registry.names()).size).toBe(2);
  });
});

describe('health()', () => {
  it('is healthy with no worker', () => {
    expect(new Registry().health()).toMatchObject({ status: 'healthy', workers: {} });
  });

  it("is healthy when every worker is, with each worker's health by name", () => {
    const registry = new Registry();
    registry.add(makeWorker('a'));
    registry.add(makeWorker('b', { autoRun: false }));
    const health = registry.health();
    expect(health.status).toBe('healthy');
    expect(Object.keys(health.workers).sort()).toEqual(['a', 'b']);
    expect(health.workers.a?.status).toBe('healthy');
    expect(health.workers.b?.status).toBe('healthy');
  });

  it('lists a worker named "__proto__" like any other, and counts it in the worst status', async () => {
    const registry = new Registry();
    registry.add(haltedWorker('__proto__'));
    registry.add(makeWorker('b'));
    await flushMicrotasks();
    const health = registry.health();
    expect(health.status).toBe('halted');
    expect(Object.keys(health.workers)).toEqual(['__proto__', 'b']);
    expect(Object.getOwnPropertyDescriptor(health.workers, '__proto__')?.value).toMatchObject({ status: 'halted' });
    expect(Object.getPrototypeOf(health.workers)).toBe(Object.prototype);
    expect(Object.keys(JSON.parse(JSON.stringify(health.workers)) as object)).toEqual(['__proto__', 'b']);
  });

  it('is the worst of the workers: one halted worker makes it halted', async () => {
    const registry = new Registry();
    registry.add(makeWorker('fine'));
    registry.add(haltedWorker('broken'));
    registry.add(makeWorker('also-fine'));
    await flushMicrotasks();
    const health = registry.health();
    expect(health.status).toBe('halted');
    expect(health.workers.broken?.status).toBe('halted');
    expect(health.workers.broken?.reason).toEqual(expect.any(String));
    expect(health.workers.fine?.status).toBe('healthy');
    expect(health.workers['also-fine']?.status).toBe('healthy');
  });

  it('follows the workers: healthy again once the halted one is stopped', async () => {
    const registry = new Registry();
    const broken = haltedWorker('broken');
    registry.add(broken);
    await flushMicrotasks();
    expect(registry.health().status).toBe('halted');
    await broken.stop();
    expect(registry.health().status).toBe('healthy');
  });
});

describe('shutdown()', () => {
  it('stops every worker and resolves when their running jobs have settled', async () => {
    const registry = new Registry();
    const a = makeWorker('a');
    const b = makeWorker('b');
    registry.add(a).add(b);
    a.bindQueue().add({ name: 'a1', ms: 100 });
    b.bindQueue().add({ name: 'b1', ms: 300 });
    await flushMicrotasks();
    const result = track(registry.shutdown());
    await vi.advanceTimersByTimeAsync(100);
    expect(a.status).toBe('stopped');
    expect(b.status).toBe('stopping');
    expect(result.done).toBe(false);
    await vi.advanceTimersByTimeAsync(200);
    expect(result.done).toBe(true);
    expect(result.value).toEqual({ stopped: ['a', 'b'], unfinished: [] });
    expect(a.status).toBe('stopped');
    expect(b.status).toBe('stopped');
    expect(ended).toEqual(['a1', 'b1']);
  });

  it('leaves waiting jobs queued; they run after start()', async () => {
    const registry = new Registry();
    const worker = makeWorker('w');
    registry.add(worker);
    const queue = worker.bindQueue();
    queue.add({ name: 'running', ms: 100 });
    const waiting = queue.add({ name: 'waiting', ms: 10 });
    const delayed = queue.add({ name: 'delayed', ms: 10 }, { delay: 50 });
    await flushMicrotasks();
    const result = track(registry.shutdown({ timeout: 1000 }));
    await vi.advanceTimersByTimeAsync(100);
    expect(result.value).toEqual({ stopped: ['w'], unfinished: [] });
    expect(worker.numPending).toBe(2);
    expect(waiting.status).toBe('waiting');
    expect(['delayed', 'waiting']).toContain(delayed.status);
    await vi.advanceTimersByTimeAsync(1000);
    expect(ended).toEqual(['running']);
    worker.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(waiting.status).toBe('succeeded');
    expect(delayed.status).toBe('succeeded');
  });

  it('resolves before the timeout when the jobs settle first, and leaves no timer behind', async () => {
    const registry = new Registry();
    const worker = makeWorker('w');
    registry.add(worker);
    worker.bindQueue().add({ name: 'quick', ms: 100 });
    await flushMicrotasks();
    const result = track(registry.shutdown({ timeout: 10_000 }));
    await vi.advanceTimersByTimeAsync(100);
    expect(result.done).toBe(true);
    expect(result.value).toEqual({ stopped: ['w'], unfinished: [] });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('at the timeout cancels the running jobs (signals abort, handles settle cancelled) and reports them unfinished', async () => {
    const registry = new Registry();
    const fast = makeWorker('fast');
    const slow = makeWorker('slow', { concurrency: 2 });
    registry.add(fast).add(slow);
    fast.bindQueue().add({ name: 'f', ms: 50 });
    const slowQueue = slow.bindQueue();
    const stuck = slowQueue.add({ name: 'stuck', ms: 10_000 });
    const polite = slowQueue.add({ name: 'polite', ms: 10_000, honourSignal: true });
    const waiting = slowQueue.add({ name: 'waiting', ms: 1 });
    await flushMicrotasks();
    const result = track(registry.shutdown({ timeout: 1000 }));
    await vi.advanceTimersByTimeAsync(999);
    expect(result.done).toBe(false);
    expect(signals.get('stuck')?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(result.done).toBe(true);
    expect(result.value).toEqual<ShutdownResult>({ stopped: ['fast'], unfinished: ['slow'] });
    expect(signals.get('stuck')?.aborted).toBe(true);
    expect(signals.get('stuck')?.reason).toBeInstanceOf(CancelledError);
    expect(signals.get('polite')?.aborted).toBe(true);
    expect(stuck.status).toBe('cancelled');
    expect(polite.status).toBe('cancelled');
    await expect(stuck.result()).rejects.toBeInstanceOf(CancelledError);
    // The waiting job stays queued; the job that ignores its signal keeps its slot until it returns.
    expect(waiting.status).toBe('waiting');
    expect(slow.numPending).toBe(1);
    expect(slow.numProcessing).toBe(1);
    expect(slow.status).toBe('stopping');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(slow.status).toBe('stopped');
    expect(stuck.status).toBe('cancelled');
    expect(waiting.status).toBe('waiting');
  });

  it('timeout 0 cancels whatever runs at once', async () => {
    const registry = new Registry();
    const worker = makeWorker('w');
    registry.add(worker);
    const handle = worker.bindQueue().add({ name: 'job', ms: 100 });
    await flushMicrotasks();
    const result = track(registry.shutdown({ timeout: 0 }));
    await vi.advanceTimersByTimeAsync(0);
    expect(result.value).toEqual({ stopped: [], unfinished: ['w'] });
    expect(handle.status).toBe('cancelled');
  });

  it('stops workers in every state: initiated, idle, paused, already stopped, halted', async () => {
    const registry = new Registry();
    const initiated = makeWorker('initiated', { autoRun: false });
    initiated.bindQueue().add({ name: 'never', ms: 1 });
    const idle = makeWorker('idle');
    const paused = makeWorker('paused');
    paused.pause();
    const stopped = makeWorker('stopped');
    await stopped.stop();
    const halted = haltedWorker('halted');
    for (const worker of [initiated, idle, paused, stopped, halted]) registry.add(worker);
    await flushMicrotasks();
    expect(halted.status).toBe('halted');
    const result = await registry.shutdown({ timeout: 100 });
    expect(result).toEqual({ stopped: ['initiated', 'idle', 'paused', 'stopped', 'halted'], unfinished: [] });
    for (const worker of [initiated, idle, paused, stopped, halted]) expect(worker.status).toBe('stopped');
    expect(initiated.numPending).toBe(1);
    expect(halted.numPending).toBe(1);
  });

  it('with no worker resolves to empty lists', async () => {
    await expect(new Registry().shutdown({ timeout: 10 })).resolves.toEqual({ stopped: [], unfinished: [] });
    await expect(new Registry().shutdown()).resolves.toEqual({ stopped: [], unfinished: [] });
  });

  it('does not reject when a worker is stopping already', async () => {
    const registry = new Registry();
    const worker = makeWorker('w');
    registry.add(worker);
    worker.bindQueue().add({ name: 'job', ms: 100 });
    await flushMicrotasks();
    const first = worker.stop();
    const result = track(registry.shutdown());
    await vi.advanceTimersByTimeAsync(100);
    await first;
    expect(result.value).toEqual({ stopped: ['w'], unfinished: [] });
  });

  it.each([
    [{ timeout: -1 }, RangeError],
    [{ timeout: Infinity }, RangeError],
    [{ timeout: '5' }, TypeError],
    ['soon', TypeError],
    [{ timout: 50 }, TypeError], // misspelt: it would wait for ever
  ])('rejects on bad options %j (%o), before stopping anything', async (options, type) => {
    const worker = makeWorker('w');
    const registry = new Registry().add(worker);
    worker.bindQueue().add({ name: 'job', ms: 100 });
    await flushMicrotasks();
    const shutdown = registry.shutdown(options as never);
    await expect(shutdown).rejects.toThrow(type);
    await expect(shutdown).rejects.toThrow(/shutdown option|shutdown options/);
    expect(worker.status).toBe('running');
    expect(signals.get('job')?.aborted).toBe(false);
  });
});
