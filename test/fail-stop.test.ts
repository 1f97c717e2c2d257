import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  InvalidStateError,
  InvariantError,
  Strategy,
  Worker,
  type Job,
  type SourceView,
  type Strategy as StrategyType,
  type WorkerOptions,
} from '../src/index.js';
import { deferred, flushMicrotasks, type Deferred } from './helpers.js';

/**
 * Fail-stop (SPEC 8): a custom strategy that breaks its contract halts the worker, which keeps
 * every waiting job, tells whoever waits, lets nothing escape to the host, and recovers on start().
 */

type Misbehaviour =
  | 'throws'
  | 'returns undefined'
  | 'returns an ineligible entry'
  | 'returns a copy of an entry'
  | 'returns an object made from an entry'
  | 'returns a Proxy of an entry'
  | "returns another worker's entry";

const MISBEHAVIOURS: Misbehaviour[] = [
  'throws',
  'returns undefined',
  'returns an ineligible entry',
  'returns a copy of an entry',
  // Both pass `instanceof` and read the entry's own fields through it: still not the entry.
  'returns an object made from an entry',
  'returns a Proxy of an entry',
  "returns another worker's entry",
];

/** An entry of another worker's list, captured by a well-behaved picker (see beforeAll). */
let foreignEntry: SourceView | undefined;

/**
 * A strategy that behaves like Priority until told to misbehave. `calls` counts picks; with
 * `fromCall` it misbehaves from that pick on.
 */
class Switchable {
  mode: Misbehaviour | 'ok' = 'ok';
  calls = 0;
  fromCall = 1;
  readonly strategy: StrategyType = {
    name: 'Switchable',
    create: () => ({ pick: (list) => this.pick(list) }),
  };

  pick(list: readonly SourceView[]): SourceView {
    this.calls++;
    const first = list.find((view) => view.eligible) as SourceView;
    if (this.mode === 'ok' || this.calls < this.fromCall) return first;
    switch (this.mode) {
      case 'throws':
        throw new Error('picker exploded');
      case 'returns undefined':
        return undefined as unknown as SourceView;
      case 'returns an ineligible entry': {
        const ineligible = list.find((view) => !view.eligible);
        if (ineligible === undefined) throw new Error('test setup: bind an empty source');
        return ineligible;
      }
      case 'returns a copy of an entry':
        return { ...first, name: first.name, index: first.index, eligible: true, length: first.length } as SourceView;
      case 'returns an object made from an entry':
        return Object.create(first) as SourceView;
      case 'returns a Proxy of an entry':
        return new Proxy(first, {});
      case "returns another worker's entry":
        return foreignEntry as SourceView;
    }
  }
}

interface Run {
  data: string;
  finish: Deferred<void>;
}

let runs: Run[] = [];
let escaped: unknown[] = [];
const onEscape = (error: unknown): void => void escaped.push(error);

/** A handler whose jobs finish when the test says so (or at once for data starting with 'quick'). */
function handler(job: Job<string>): Promise<void> | void {
  if (job.data.startsWith('quick')) {
    runs.push({ data: job.data, finish: deferred<void>() });
    return;
  }
  const finish = deferred<void>();
  runs.push({ data: job.data, finish });
  return finish.promise;
}

/** A worker with two queues: `main` (ranked first) and `spare` (left empty unless a test fills it). */
function setup(options?: WorkerOptions) {
  const switchable = new Switchable();
  const worker = new Worker<string, void>(handler, { strategy: switchable.strategy, ...options });
  const halts: InvariantError[] = [];
  worker.on('halted', (error) => halts.push(error));
  const main = worker.bindQueue({ name: 'main', priority: 1 });
  const spare = worker.bindQueue({ name: 'spare', priority: 2 });
  return { worker, switchable, halts, main, spare };
}

beforeAll(async () => {
  const spy: StrategyType = {
    name: 'Spy',
    create: () => ({
      pick(list) {
        foreignEntry = list[0];
        return list.find((view) => view.eligible) as SourceView;
      },
    }),
  };
  const other = new Worker<string, void>(() => {}, { strategy: spy });
  other.bindQueue().add('x');
  other.bindQueue();
  await other.waitUntilIdle();
});

beforeEach(() => {
  runs = [];
  escaped = [];
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  vi.useFakeTimers();
});

afterEach(async () => {
  vi.useRealTimers();
  // Let anything that would escape reach the process before looking.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
  expect(escaped).toEqual([]);
});

describe.each(MISBEHAVIOURS)('a strategy that %s', (misbehaviour) => {
  it('halts the worker with an InvariantError naming the invariant; waiting jobs stay queued', async () => {
    const { worker, switchable, halts, main } = setup({ autoRun: false });
    expect(foreignEntry).toBeDefined();
    main.add('a');
    main.add('b');
    main.add('c');
    switchable.mode = misbehaviour;
    worker.start();
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    expect(halts).toHaveLength(1);
    const error = halts[0] as InvariantError;
    expect(error).toBeInstanceOf(InvariantError);
    expect(typeof error.invariant).toBe('string');
    expect(error.invariant.length).toBeGreaterThan(0);
    expect(error.message).toContain(error.invariant);
    expect(error.message).toContain('Switchable');
    if (misbehaviour === 'throws') expect(error.message).toContain('picker exploded');
    if (misbehaviour === 'returns an ineligible entry') expect(error.invariant).toMatch(/eligib/);
    expect(runs).toEqual([]);
    expect(worker.numPending).toBe(3);
    expect(worker.numProcessing).toBe(0);
    expect(main.length).toBe(3);
  });

  it('health() reports `halted` with the reason', async () => {
    const { worker, switchable, halts, main } = setup();
    switchable.mode = misbehaviour;
    main.add('a');
    await flushMicrotasks();
    const health = worker.health();
    expect(health.status).toBe('halted');
    expect(typeof health.reason).toBe('string');
    expect(health.reason).toContain((halts[0] as InvariantError).invariant);
  });

  it('recovers on start() once the strategy behaves: the halt is cleared and the jobs run', async () => {
    const { worker, switchable, halts, main } = setup();
    switchable.mode = misbehaviour;
    main.add('quick-1');
    main.add('quick-2');
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    switchable.mode = 'ok';
    worker.start();
    expect(worker.health().status).toBe('healthy');
    await worker.waitUntilIdle();
    expect(runs.map((r) => r.data)).toEqual(['quick-1', 'quick-2']);
    expect(worker.status).toBe('idle');
    expect(halts).toHaveLength(1);
  });
});

describe('while halted', () => {
  it('adding still works: jobs are queued, nothing starts, even as time passes', async () => {
    const { worker, switchable, main, spare } = setup();
    switchable.mode = 'throws';
    main.add('a');
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    const handle = main.add('b');
    const delayed = spare.add('c', { delay: 100 });
    expect(handle.status).toBe('waiting');
    expect(delayed.status).toBe('delayed');
    expect(worker.numPending).toBe(3);
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toEqual([]);
    expect(worker.numPending).toBe(3);
    expect(worker.status).toBe('halted');
  });

  it('the worker claims nothing more: a running job finishes, the next is not started', async () => {
    const { worker, switchable, halts, main } = setup({ concurrency: 1 });
    main.add('a');
    main.add('b');
    await flushMicrotasks();
    expect(runs.map((r) => r.data)).toEqual(['a']);
    switchable.mode = 'returns undefined';
    const handle = main.add('c');
    runs[0]?.finish.resolve();
    await flushMicrotasks();
    expect(halts).toHaveLength(1);
    expect(worker.status).toBe('halted');
    expect(worker.numProcessing).toBe(0);
    expect(worker.numPending).toBe(2);
    expect(handle.status).toBe('waiting');
    expect(runs.map((r) => r.data)).toEqual(['a']);
  });

  it('jobs running at the halt settle normally, and the worker stays halted', async () => {
    const { worker, switchable, main } = setup({ concurrency: 2 });
    switchable.fromCall = 2;
    switchable.mode = 'throws';
    const first = main.add('a');
    main.add('b');
    main.add('c');
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    expect(runs.map((r) => r.data)).toEqual(['a']);
    expect(worker.numProcessing).toBe(1);
    runs[0]?.finish.resolve();
    await expect(first.result()).resolves.toBeUndefined();
    expect(worker.numProcessing).toBe(0);
    expect(worker.status).toBe('halted');
    expect(worker.numPending).toBe(2);
  });

  it("waitUntilIdle() pending at the halt rejects with the halt's error", async () => {
    const { worker, switchable, halts, main } = setup();
    main.add('a');
    main.add('b');
    await flushMicrotasks();
    const idle = worker.waitUntilIdle();
    const outcome = idle.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    switchable.mode = 'returns an ineligible entry';
    runs[0]?.finish.resolve();
    await flushMicrotasks();
    expect(halts).toHaveLength(1);
    expect(await outcome).toBe(halts[0]);
  });

  it('waitUntilIdle() called later rejects with the same error, at once', async () => {
    const { worker, switchable, halts, main } = setup();
    switchable.mode = 'throws';
    main.add('a');
    await flushMicrotasks();
    await expect(worker.waitUntilIdle()).rejects.toBe(halts[0]);
    await expect(worker.waitUntilIdle()).rejects.toBe(halts[0]);
  });

  it('the halt is reported once, however many jobs wait', async () => {
    const { worker, switchable, halts, main } = setup({ concurrency: 4 });
    switchable.mode = 'throws';
    for (let i = 0; i < 10; i++) main.add(`j${i}`);
    await flushMicrotasks();
    main.add('more');
    await vi.advanceTimersByTimeAsync(100);
    expect(halts).toHaveLength(1);
    expect(worker.status).toBe('halted');
  });

  it('halting with no `halted` listener and nobody waiting lets nothing escape', async () => {
    const switchable = new Switchable();
    switchable.mode = 'throws';
    const worker = new Worker<string, void>(handler, { strategy: switchable.strategy });
    const queue = worker.bindQueue();
    worker.bindQueue();
    queue.add('a');
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    // afterEach checks that no uncaught exception or unhandled rejection reached the process.
  });

  it('pause() and resume() throw InvalidStateError; stop() works and start() afterwards runs the jobs', async () => {
    const { worker, switchable, main } = setup();
    switchable.mode = 'throws';
    main.add('quick-a');
    await flushMicrotasks();
    expect(() => worker.pause()).toThrow(InvalidStateError);
    expect(() => worker.resume()).toThrow(InvalidStateError);
    await worker.stop();
    expect(worker.status).toBe('stopped');
    switchable.mode = 'ok';
    worker.start();
    await worker.waitUntilIdle();
    expect(runs.map((r) => r.data)).toEqual(['quick-a']);
  });
});

describe('recovery', () => {
  it('runs jobs added while halted, delayed ones when they come due', async () => {
    const { worker, switchable, main, spare } = setup();
    switchable.mode = 'throws';
    main.add('quick-1');
    await flushMicrotasks();
    main.add('quick-2');
    spare.add('quick-later', { delay: 500 });
    await vi.advanceTimersByTimeAsync(100);
    switchable.mode = 'ok';
    worker.start();
    await flushMicrotasks();
    expect(runs.map((r) => r.data)).toEqual(['quick-1', 'quick-2']);
    expect(worker.status).toBe('running');
    await vi.advanceTimersByTimeAsync(399);
    expect(runs).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs.map((r) => r.data)).toEqual(['quick-1', 'quick-2', 'quick-later']);
    await worker.waitUntilIdle();
    expect(worker.status).toBe('idle');
  });

  it('a delayed job that came due while halted runs after start()', async () => {
    const { worker, switchable, main, spare } = setup();
    spare.add('quick-later', { delay: 100 });
    switchable.mode = 'throws';
    main.add('quick-now');
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    await vi.advanceTimersByTimeAsync(500);
    expect(runs).toEqual([]);
    switchable.mode = 'ok';
    worker.start();
    await flushMicrotasks();
    expect(runs.map((r) => r.data)).toEqual(['quick-now', 'quick-later']);
  });

  it('a strategy that still misbehaves halts the worker again, with a new error', async () => {
    const { worker, switchable, halts, main } = setup();
    switchable.mode = 'throws';
    main.add('a');
    await flushMicrotasks();
    worker.start();
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    expect(halts).toHaveLength(2);
    expect(halts[1]).not.toBe(halts[0]);
    await expect(worker.waitUntilIdle()).rejects.toBe(halts[1]);
    expect(worker.numPending).toBe(1);
  });

  it('waitUntilIdle() called after the recovery resolves once the work is done', async () => {
    const { worker, switchable, main } = setup();
    switchable.mode = 'returns undefined';
    main.add('a');
    await flushMicrotasks();
    switchable.mode = 'ok';
    worker.start();
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    await flushMicrotasks();
    expect(idle).toBe(false);
    runs[0]?.finish.resolve();
    await flushMicrotasks();
    expect(idle).toBe(true);
  });

  it("a 'halted' listener that restarts a worker whose strategy keeps throwing never starves the event loop", async () => {
    const { worker, switchable, main } = setup();
    switchable.mode = 'throws';
    let halts = 0;
    let haltsWhenTimerRan = -1;
    worker.on('halted', () => {
      halts++;
      if (halts < 50) worker.start(); // the recovery of docs/failure-handling.md, with the cause not fixed
    });
    setTimeout(() => (haltsWhenTimerRan = halts), 0);
    main.add('a');
    await vi.advanceTimersByTimeAsync(0);
    // Halt, start, pass must not loop in microtasks: the timer gets its turn after a few recoveries.
    expect(haltsWhenTimerRan).toBeGreaterThanOrEqual(1);
    expect(haltsWhenTimerRan).toBeLessThan(10);
    await vi.advanceTimersByTimeAsync(100);
    expect(halts).toBe(50);
    expect(worker.status).toBe('halted');
    expect(worker.numPending).toBe(1);
  });

  it('the built-in strategies never halt the worker on the same workload', async () => {
    for (const strategy of Object.values(Strategy)) {
      const worker = new Worker<string, void>(() => {}, { strategy });
      const halted = vi.fn();
      worker.on('halted', halted);
      const a = worker.bindQueue({ priority: 1 });
      const b = worker.bindQueue({ priority: 2 });
      worker.bindQueue();
      for (let i = 0; i < 5; i++) a.add(`a${i}`);
      b.add('b', { delay: 10 });
      await vi.advanceTimersByTimeAsync(20);
      await worker.waitUntilIdle();
      expect(halted).not.toHaveBeenCalled();
    }
  });
});
