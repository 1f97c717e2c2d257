/**
 * Events (SPEC 8): every event fires with the documented arguments, listeners are type-checked
 * against the event map (the `@ts-expect-error` lines below fail `tsc --noEmit` if a wrong
 * listener compiles), and a listener that throws does not break the worker.
 */
import { afterEach, beforeEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { Worker as BuiltWorker } from '../dist/index.js';
import {
  CancelledError,
  InvariantError,
  Worker,
  type InvalidStateError,
  type Job,
  type SourceView,
  type Strategy,
  type TrackedJob,
  type WorkerEvents,
} from '../src/index.js';
import { Gate, captureWarnings, flushMicrotasks } from './helpers.js';

type Call = [event: string, ...args: unknown[]];

/** Records every event of `worker` (with its arguments) in emission order. */
function record<T, R>(worker: Worker<T, R>): Call[] {
  const calls: Call[] = [];
  const names: (keyof WorkerEvents)[] = [
    'active',
    'completed',
    'failed',
    'retrying',
    'dead',
    'cancelled',
    'idle',
    'paused',
    'resumed',
    'stopped',
    'halted',
    'degraded',
    'error',
  ];
  for (const name of names) {
    (worker as unknown as { on(event: string, fn: (...args: unknown[]) => void): void }).on(name, (...args) => calls.push([name, ...args]));
  }
  return calls;
}

/** Event names only. */
const names = (calls: Call[]): string[] => calls.map(([event]) => event);
const only = (calls: Call[], event: string): unknown[][] => calls.filter(([name]) => name === event).map(([, ...args]) => args);

describe('job events (fake timers)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('active (job) then completed (job, result): the job is the handle add returned, with its data and source', async () => {
    const worker = new Worker<string, number>((job) => job.data.length);
    const calls = record(worker);
    const handle = worker.bindQueue({ name: 'words' }).add('hello');
    await worker.waitUntilIdle();
    expect(names(calls)).toEqual(['active', 'completed', 'idle']);
    const [[activeJob]] = only(calls, 'active') as [[TrackedJob<string, number>]];
    expect(activeJob).toBe(handle);
    expect(activeJob.id).toBe(handle.id);
    expect(activeJob.data).toBe('hello');
    expect(activeJob.source).toBe('words');
    expect(activeJob.attempt).toBe(1);
    const completed = only(calls, 'completed');
    expect(completed).toEqual([[handle, 5]]);
    expect(only(calls, 'idle')).toEqual([[]]);
  });

  it('active reports the job as running; completed as succeeded', async () => {
    const statuses: string[] = [];
    const worker = new Worker<string, string>((job) => job.data);
    worker.on('active', (job) => statuses.push(`active:${job.status}`));
    worker.on('completed', (job, result) => statuses.push(`completed:${job.status}:${result}`));
    worker.bindQueue().add('x');
    await worker.waitUntilIdle();
    expect(statuses).toEqual(['active:running', 'completed:succeeded:x']);
  });

  it('retrying (job, error, delayMs) per retried attempt, then failed (job, error) and dead (job, error) once', async () => {
    const errors: Error[] = [];
    const worker = new Worker<string, never>(
      (job) => {
        const error = new Error(`attempt ${job.attempt}`);
        errors.push(error);
        throw error;
      },
      { retry: { attempts: 3, backoff: { type: 'exponential', delay: 100 } } },
    );
    const calls = record(worker);
    const handle = worker.bindQueue().add('doomed');
    await vi.runAllTimersAsync();
    await worker.waitUntilIdle();
    expect(names(calls)).toEqual(['active', 'retrying', 'active', 'retrying', 'active', 'failed', 'dead', 'idle']);
    expect(only(calls, 'retrying')).toEqual([
      [handle, errors[0], 100],
      [handle, errors[1], 200],
    ]);
    expect(only(calls, 'failed')).toEqual([[handle, errors[2]]]);
    expect(only(calls, 'dead')).toEqual([[handle, errors[2]]]);
    expect(handle.status).toBe('failed');
    expect(worker.deadLetters).toHaveLength(1);
  });

  it('a job that succeeds on retry emits retrying then completed, never failed', async () => {
    const worker = new Worker<string, string>(
      (job) => {
        if (job.attempt === 1) throw new Error('transient');
        return 'ok';
      },
      { retry: { attempts: 2, backoff: { type: 'fixed', delay: 50 } } },
    );
    const calls = record(worker);
    const handle = worker.bindQueue().add('x');
    await vi.advanceTimersByTimeAsync(49);
    expect(names(calls)).toEqual(['active', 'retrying']);
    expect(handle.status).toBe('delayed');
    await vi.advanceTimersByTimeAsync(1);
    expect(names(calls)).toEqual(['active', 'retrying', 'active', 'completed', 'idle']);
    expect(only(calls, 'completed')).toEqual([[handle, 'ok']]);
  });

  it('with deadLetterLimit 0 a job fails without dead', async () => {
    const worker = new Worker<string, never>(
      () => {
        throw new Error('x');
      },
      { deadLetterLimit: 0 },
    );
    const calls = record(worker);
    worker.bindQueue().add('x');
    await worker.waitUntilIdle();
    expect(names(calls)).toEqual(['active', 'failed', 'idle']);
  });

  it('cancelled (job) for a waiting job, a running job, a purge and an aborted signal', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const calls = record(worker);
    const q = worker.bindQueue();
    const running = q.add('running');
    const waiting = q.add('waiting');
    const purged = q.add('purged');
    const controller = new AbortController();
    await vi.advanceTimersByTimeAsync(0);
    expect(names(calls)).toEqual(['active']);

    waiting.cancel('not needed');
    expect(only(calls, 'cancelled')).toEqual([[waiting]]);
    running.cancel();
    expect(only(calls, 'cancelled')).toEqual([[waiting], [running]]);
    expect(running.status).toBe('cancelled');
    expect(gate.started[0]?.job.signal.aborted).toBe(true);
    expect(gate.started[0]?.job.signal.reason).toBeInstanceOf(CancelledError);
    q.purge();
    expect(only(calls, 'cancelled')).toEqual([[waiting], [running], [purged]]);
    const signalled = q.add('signalled', { signal: controller.signal });
    controller.abort();
    expect(only(calls, 'cancelled')).toEqual([[waiting], [running], [purged], [signalled]]);

    // A cancelled job is not completed or failed when its handler settles later.
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(names(calls).filter((name) => name === 'completed' || name === 'failed')).toEqual([]);
  });

  it('idle () once per busy period, when nothing runs and nothing waits; not for a worker that never had work', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 2 });
    const calls = record(worker);
    const q = worker.bindQueue();
    await vi.advanceTimersByTimeAsync(10);
    expect(calls).toEqual([]);
    q.add('a');
    q.add('b');
    q.add('c', { delay: 100 });
    await vi.advanceTimersByTimeAsync(0);
    gate.finishAll();
    await vi.advanceTimersByTimeAsync(0);
    // The delayed job counts as waiting: not idle yet.
    expect(names(calls)).not.toContain('idle');
    await vi.advanceTimersByTimeAsync(100);
    gate.finishAll();
    await vi.advanceTimersByTimeAsync(0);
    expect(only(calls, 'idle')).toEqual([[]]);
    q.add('d');
    await vi.advanceTimersByTimeAsync(0);
    gate.finishAll();
    await vi.advanceTimersByTimeAsync(0);
    expect(only(calls, 'idle')).toEqual([[], []]);
  });
});

describe('lifecycle events', () => {
  it('paused () and resumed () when they take effect, not for no-op calls', async () => {
    const worker = new Worker(() => undefined);
    const calls = record(worker);
    worker.pause();
    worker.pause(); // no-op
    expect(only(calls, 'paused')).toEqual([[]]);
    worker.resume();
    worker.resume(); // no-op
    expect(names(calls)).toEqual(['paused', 'resumed']);
  });

  it('stopped () once stop() has finished: after the running jobs settle', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const calls = record(worker);
    worker.bindQueue().add('long');
    await flushMicrotasks();
    const stopping = worker.stop();
    expect(worker.status).toBe('stopping');
    expect(names(calls)).toEqual(['active']);
    gate.finishAll();
    await stopping;
    expect(names(calls)).toEqual(['active', 'completed', 'stopped']);
    expect(only(calls, 'stopped')).toEqual([[]]);
    await worker.stop(); // already stopped: nothing more
    expect(only(calls, 'stopped')).toHaveLength(1);
  });

  it('halted (error: InvariantError) when a strategy picks an ineligible source', async () => {
    const broken: Strategy = {
      name: 'PicksTheEmptyOne',
      create: () => ({ pick: (list: readonly SourceView[]) => list.find((view) => !view.eligible) as SourceView }),
    };
    const worker = new Worker<string, void>(() => undefined, { strategy: broken });
    const calls = record(worker);
    worker.bindQueue({ name: 'full' }).add('x');
    worker.bindQueue({ name: 'empty' });
    await flushMicrotasks();
    expect(worker.status).toBe('halted');
    const halted = only(calls, 'halted');
    expect(halted).toHaveLength(1);
    const [[error]] = halted as [[InvariantError]];
    expect(error).toBeInstanceOf(InvariantError);
    expect(error.message).toContain(error.invariant);
    expect(names(calls)).toEqual(['halted']);
  });

  it('error (error) for a retryIf hook that throws; the job fails and the worker carries on', async () => {
    const hookError = new Error('retryIf exploded');
    const worker = new Worker<string, string>(
      (job) => {
        if (job.data === 'bad') throw new Error('bad job');
        return job.data;
      },
      {
        retry: {
          attempts: 3,
          retryIf: () => {
            throw hookError;
          },
        },
      },
    );
    const calls = record(worker);
    const q = worker.bindQueue();
    const bad = q.add('bad');
    const good = q.add('good');
    await worker.waitUntilIdle();
    expect(only(calls, 'error')).toEqual([[hookError]]);
    expect(bad.status).toBe('failed');
    expect(good.status).toBe('succeeded');
  });
});

describe('a listener that throws', () => {
  it('does not break the worker: jobs still run and settle, and the error is reported on "error"', async () => {
    const worker = new Worker<number, number>((job) => job.data * 2, { concurrency: 1 });
    const reported: unknown[] = [];
    const listenerErrors = ['active', 'completed', 'idle'].map((event) => new Error(`${event} listener bug`));
    worker.on('active', () => {
      throw listenerErrors[0];
    });
    worker.on('completed', () => {
      throw listenerErrors[1];
    });
    worker.on('idle', () => {
      throw listenerErrors[2];
    });
    worker.on('error', (error) => reported.push(error));
    const q = worker.bindQueue();
    const handles = [q.add(1), q.add(2)];
    await expect(Promise.all(handles.map((h) => h.result()))).resolves.toEqual([2, 4]);
    await worker.waitUntilIdle();
    expect(worker.status).toBe('idle');
    expect(worker.numProcessing).toBe(0);
    expect(worker.health().status).toBe('healthy');
    expect(reported).toEqual([listenerErrors[0], listenerErrors[1], listenerErrors[0], listenerErrors[1], listenerErrors[2]]);
    // And it keeps working afterwards.
    await expect(q.add(5).result()).resolves.toBe(10);
  });

  it('with no "error" listener becomes a process warning, never an uncaught exception', async () => {
    const { warnings, stop } = captureWarnings();
    const escaped: unknown[] = [];
    const onEscape = (error: unknown): void => void escaped.push(error);
    process.on('uncaughtException', onEscape);
    try {
      const worker = new Worker<number, number>((job) => job.data, { name: 'noisy' });
      const bug = new Error('completed listener bug');
      worker.on('completed', () => {
        throw bug;
      });
      await expect(worker.bindQueue().add(7).result()).resolves.toBe(7);
      await worker.waitUntilIdle();
      await new Promise<void>((resolve) => setImmediate(resolve)); // warnings are emitted on nextTick
      expect(warnings).toHaveLength(1);
      const warning = warnings[0]!;
      expect(warning.name).toBe('QmuxWarning');
      expect(warning.message).toBe('Error: completed listener bug');
      expect(warning.detail).toContain('worker "noisy": a listener of the "completed" event threw; listen to its "error" event to handle this.');
      expect(warning.detail).toContain(bug.stack);
      expect(escaped).toEqual([]);
    } finally {
      stop();
      process.off('uncaughtException', onEscape);
    }
  });
});

describe('degraded (threads)', () => {
  it('degraded (error) after three thread crashes; health() says degraded', async () => {
    const worker = new BuiltWorker<string, string>(new URL('./fixtures/exit-thread.mjs', import.meta.url), { concurrency: 1 });
    try {
      const degraded: unknown[] = [];
      worker.on('degraded', (error) => degraded.push(error));
      const q = worker.bindQueue();
      const crashes = [q.add('crash 1'), q.add('crash 2'), q.add('crash 3')];
      const ok = q.add('ok');
      await expect(ok.result()).resolves.toBe('ok');
      expect(crashes.map((h) => h.status)).toEqual(['failed', 'failed', 'failed']);
      expect(degraded).toHaveLength(1);
      const third = await crashes[2]?.result().catch((error: unknown) => error);
      expect(degraded[0]).toBe(third);
      expect(worker.health().status).toBe('degraded');
    } finally {
      await worker.stop();
    }
  });
});

describe('listener types (checked by tsc --noEmit)', () => {
  it('listeners get the argument types of the event map; wrong ones do not compile', () => {
    const worker = new Worker<string, string>((job: Job<string>) => job.data, { autoRun: false });
    const acceptsNumber = (n: number): number => n;

    worker.on('active', (job) => {
      expectTypeOf(job.data).toEqualTypeOf<string>();
      expectTypeOf(job.attempt).toEqualTypeOf<number>();
      expectTypeOf(job.status).toEqualTypeOf<TrackedJob<string, string>['status']>();
    });
    worker.on('completed', (job, result) => {
      expectTypeOf(job).toEqualTypeOf<TrackedJob<string, string>>();
      expectTypeOf(result).toEqualTypeOf<string>();
    });
    worker.on('retrying', (_job, error, delayMs) => {
      expectTypeOf(error).toEqualTypeOf<unknown>();
      expectTypeOf(delayMs).toEqualTypeOf<number | undefined>(); // undefined for a remote job (SPEC 9)
    });
    worker.on('halted', (error) => expectTypeOf(error).toEqualTypeOf<InvariantError>());
    worker.on('idle', () => undefined);

    // @ts-expect-error the result of a Worker<string, string> is a string, not a number
    worker.on('completed', (_job, _result: number) => undefined);
    // @ts-expect-error job data is a string
    worker.on('active', (job) => acceptsNumber(job.data));
    // @ts-expect-error no such event
    worker.on('finished', () => undefined);
    // @ts-expect-error 'idle' has no arguments
    worker.on('idle', (_what: string) => undefined);
    // @ts-expect-error delayMs is a number
    worker.on('retrying', (_job, _error, _delayMs: string) => undefined);
    // @ts-expect-error 'halted' gives an InvariantError, not an InvalidStateError
    worker.on('halted', (_error: InvalidStateError) => undefined);
    // @ts-expect-error 'cancelled' gives one job, not a job and a reason
    worker.on('cancelled', (_job, _reason: string) => undefined);
    // @ts-expect-error emit checks arguments too
    worker.emit('completed', worker as unknown as TrackedJob<string, string>, 42);

    expect(worker.listenerCount('completed')).toBe(2);
    worker.removeAllListeners();
  });
});

describe('a listener that throws a value String() cannot convert', () => {
  const revoked = (): object => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  };
  it.each([
    ['a null-prototype object', () => Object.create(null) as object, '[object Object]'],
    ['a revoked Proxy', revoked, '[a value that cannot be shown]'],
  ])('%s becomes a process warning, and the worker runs on (it does not halt)', async (_what, thrown, message) => {
    const { warnings, stop } = captureWarnings();
    try {
      const worker = new Worker(async (job: Job<string>) => job.data);
      const halted: unknown[] = [];
      worker.on('halted', (error) => halted.push(error));
      worker.once('completed', () => {
        throw thrown();
      });
      const q = worker.bindQueue();
      q.add('a');
      const second = q.add('b');
      await worker.waitUntilIdle();
      await new Promise((resolve) => setImmediate(resolve)); // process warnings are emitted on the next tick
      expect(halted).toEqual([]);
      expect(second.status).toBe('succeeded');
      expect(warnings.map((warning) => warning.message)).toEqual([message]);
      expect(warnings[0]?.detail).toMatch(/a listener of the "completed" event threw/);
    } finally {
      stop();
    }
  });
});
