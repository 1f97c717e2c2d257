/**
 * Progress (SPEC 5): `job.updateProgress(value)` inside a handler records the latest value on the
 * handle and emits `progress`; a threads handler does the same with `ctx.updateProgress`, and
 * every report sent before the handler returned is recorded before the job settles.
 */
import { existsSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Worker as BuiltWorker } from '../dist/index.js';
import { Worker, type Job, type JobHandle, type JobProgress } from '../src/index.js';
import { Gate, flushMicrotasks } from './helpers.js';
import { MemoryEngine } from './support/memory-engine.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('job.updateProgress in an async handler', () => {
  it('records the latest value on the handle (undefined before the first report) and emits progress', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const events: Array<[string, JobProgress]> = [];
    worker.on('progress', (job, value) => events.push([job.id, value]));
    const handle = worker.bindQueue().add('a', { id: 'p-1' });
    expect(handle.progress).toBeUndefined();
    await flushMicrotasks();
    const job = gate.started[0]?.job as Job<string>;
    job.updateProgress(10);
    expect(handle.progress).toBe(10);
    job.updateProgress({ done: 5, total: 10 });
    expect(handle.progress).toEqual({ done: 5, total: 10 });
    expect(events).toEqual([
      ['p-1', 10],
      ['p-1', { done: 5, total: 10 }],
    ]);
    gate.finishOldest();
    await handle.settled();
    expect(handle.progress).toEqual({ done: 5, total: 10 });
  });

  it('works from a synchronous handler, before the job settles', async () => {
    const seen: Array<[string, unknown]> = [];
    const worker = new Worker((job: Job<number>) => {
      job.updateProgress(job.data);
      return job.data;
    });
    worker.on('progress', (_job, value) => seen.push(['progress', value]));
    worker.on('completed', (job) => seen.push(['completed', job.progress]));
    await worker.bindQueue().add(7).result();
    expect(seen).toEqual([
      ['progress', 7],
      ['completed', 7],
    ]);
  });

  it('keeps the value across retries', async () => {
    vi.useFakeTimers();
    const values: unknown[] = [];
    let handle: JobHandle<string> | undefined;
    const worker = new Worker(
      (job: Job<string>) => {
        values.push(handle?.progress);
        if (job.attempt === 1) {
          job.updateProgress(50);
          throw new Error('first attempt fails');
        }
        return 'ok';
      },
      { retry: { attempts: 2, backoff: { type: 'fixed', delay: 10 } } },
    );
    handle = worker.bindQueue().add('a');
    await vi.advanceTimersByTimeAsync(10);
    expect(await handle.result()).toBe('ok');
    expect(values).toEqual([undefined, 50]);
    expect(handle.progress).toBe(50);
  });

  it('ignores a report after the job has settled, without throwing (succeeded, cancelled)', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { concurrency: 2 });
    const events: unknown[] = [];
    worker.on('progress', (_job, value) => events.push(value));
    const q = worker.bindQueue();
    const done = q.add('done');
    const cancelled = q.add('cancelled');
    await flushMicrotasks();
    const [first, second] = gate.started;
    first?.job.updateProgress(1);
    first?.finish();
    await done.settled();
    expect(() => first?.job.updateProgress(2)).not.toThrow();
    cancelled.cancel();
    expect(() => second?.job.updateProgress(3)).not.toThrow();
    expect(done.progress).toBe(1);
    expect(cancelled.progress).toBeUndefined();
    expect(events).toEqual([1]);
    second?.finish();
  });

  it('ignores a report from an attempt that timed out and will be retried, while its handler still runs', async () => {
    vi.useFakeTimers();
    const events: unknown[] = [];
    // The first attempt ignores its 100 ms timeout: it reports at 150 ms and returns at 200 ms.
    const worker = new Worker(
      async (job: Job<string>) => {
        if (job.attempt === 1) {
          await new Promise((resolve) => setTimeout(resolve, 150));
          job.updateProgress('stale');
          await new Promise((resolve) => setTimeout(resolve, 50));
          return;
        }
        job.updateProgress('second');
      },
      { timeout: 100, retry: { attempts: 2 } },
    );
    worker.on('progress', (_job, value) => events.push(value));
    const handle = worker.bindQueue().add('a');
    await vi.advanceTimersByTimeAsync(150);
    expect(handle.status).toBe('running'); // timed out, waiting for the handler before its retry
    expect(handle.progress).toBeUndefined();
    await vi.advanceTimersByTimeAsync(100);
    await handle.settled();
    expect(handle.status).toBe('succeeded');
    expect(handle.progress).toBe('second');
    expect(events).toEqual(['second']);
  });

  it('refuses undefined and null as a report with a TypeError naming the call, and records neither', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const seen: unknown[] = [];
    worker.on('progress', (_job, value) => seen.push(value));
    const handle = worker.bindQueue().add('a');
    await flushMicrotasks();
    const job = gate.started[0]?.job as Job<string>;
    job.updateProgress(1);
    for (const value of [undefined, null]) {
      expect(() => job.updateProgress(value as unknown as number)).toThrow(
        `qmux: updateProgress(value) needs a value (a number, string, boolean or object), got ${value}`,
      );
    }
    expect([handle.progress, seen]).toEqual([1, [1]]);
    gate.finishAll();
  });

  it('a progress listener that throws is reported and the job carries on', async () => {
    const worker = new Worker((job: Job<number>) => {
      job.updateProgress(1);
      return 'ok';
    });
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    worker.on('progress', () => {
      throw new Error('listener broke');
    });
    expect(await worker.bindQueue().add(1).result()).toBe('ok');
    expect(errors).toHaveLength(1);
  });
});

describe('function workers', () => {
  it('call the job’s function with its Job, so it can read its signal and report progress', async () => {
    const worker = new Worker({ concurrency: 2 });
    const events: unknown[] = [];
    worker.on('progress', (_job, value) => events.push(value));
    const q = worker.bindQueue();
    const handle = q.add((job) => {
      job.updateProgress(0.5);
      return `${job.id} ${job.attempt} ${job.signal.aborted}`;
    });
    const plain = q.add(() => 'no argument needed');
    expect(await handle.result()).toBe(`${handle.id} 1 false`);
    expect(await plain.result()).toBe('no argument needed');
    expect(handle.progress).toBe(0.5);
    expect(events).toEqual([0.5]);
  });
});

describe('ctx.updateProgress in threads', () => {
  const PROGRESS = new URL('./fixtures/threads/progress.mjs', import.meta.url);
  const made: Array<{ stop(): Promise<void> }> = [];
  beforeAll(() => {
    if (!existsSync(new URL('../dist/index.js', import.meta.url))) throw new Error('dist/ is missing: run `npm run build` first');
  });
  afterEach(async () => {
    await Promise.all(made.splice(0).map((worker) => worker.stop()));
  });

  it('records every report sent before the handler returned before the job settles, in order', async () => {
    const worker = new BuiltWorker<{ reports: number }, string>(PROGRESS, { concurrency: 2 });
    made.push(worker);
    const reports = 200;
    const seen = new Map<string, number[]>();
    const atSettle = new Map<string, { count: number; progress: unknown }>();
    worker.on('progress', (job, value) => {
      const steps = seen.get(job.id) ?? [];
      steps.push((value as { step: number }).step);
      seen.set(job.id, steps);
    });
    const record = (job: { id: string; progress: unknown }): void => {
      atSettle.set(job.id, { count: seen.get(job.id)?.length ?? 0, progress: job.progress });
    };
    worker.on('completed', record);
    worker.on('failed', record);
    const q = worker.bindQueue();
    const handles = [q.add({ reports }), q.add({ reports }), q.add({ reports, fail: true } as { reports: number }), q.add({ reports: 0 })];
    await Promise.all(handles.map((handle) => handle.settled()));
    const [a, b, failed, none] = handles.map((handle) => handle.id) as [string, string, string, string];
    for (const id of [a, b, failed]) {
      expect(atSettle.get(id)).toEqual({ count: reports, progress: { step: reports - 1, of: reports } });
      expect(seen.get(id)).toEqual(Array.from({ length: reports }, (_, i) => i));
    }
    expect(atSettle.get(none)).toEqual({ count: 0, progress: undefined });
    expect(handles[2]?.status).toBe('failed');
  });

  it('refuses null as a report in the thread too, with a TypeError naming ctx.updateProgress, and records nothing', async () => {
    const worker = new BuiltWorker<{ refuse: unknown[] }, string[]>(PROGRESS, { concurrency: 1 });
    made.push(worker);
    const events: unknown[] = [];
    worker.on('progress', (_job, value) => events.push(value));
    const handle = worker.bindQueue().add({ refuse: [null] });
    expect(await handle.result()).toEqual([
      'TypeError: qmux: ctx.updateProgress(value) needs a value (a number, string, boolean or object), got null',
    ]);
    expect([events, handle.progress]).toEqual([[], undefined]);
  });

  // Issue 33, defect 6, from a thread: no caller to throw to on the main thread, so the report is
  // reported as the TypeError and dropped, not stored in the engine; it used to read as an outage.
  it("a remote job's report that JSON cannot store is reported as a TypeError and dropped, not stored; no outage", async () => {
    const engine = new MemoryEngine();
    engine.add({ refuse: [{ n: 1n }, 5] });
    const stored: unknown[] = [];
    const adapter = Object.assign(engine.adapter(), {
      progress: async (_job: unknown, value: unknown) => {
        stored.push(JSON.parse(JSON.stringify(value)));
      },
    });
    const worker = new BuiltWorker<{ refuse: unknown[] }, string[]>(PROGRESS, { concurrency: 1 });
    made.push(worker);
    const errors: unknown[] = [];
    const events: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    worker.on('degraded', (error) => errors.push(error));
    worker.on('progress', (_job, value) => events.push(value));
    worker.bindRemote(adapter as never, { name: 'shared' });
    const deadline = Date.now() + 15_000;
    while (engine.completed.size === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect([...engine.completed.values()]).toEqual([['accepted', 'accepted']]);
    expect({ events, stored, health: worker.health().status }).toEqual({ events: [5], stored: [5], health: 'healthy' });
    expect(errors.map((error) => `${(error as Error).name}: ${(error as Error).message}`)).toEqual([
      expect.stringMatching(/^TypeError: qmux: updateProgress\(value\) of remote job \S+ needs a value its engine can store as JSON/),
    ]);
  });

  it('ignores a report the thread sends after its handler returned, without throwing there', async () => {
    const worker = new BuiltWorker<{ reports?: number; late?: boolean; askLate?: boolean }, string>(PROGRESS, { concurrency: 1 });
    made.push(worker);
    const events: unknown[] = [];
    worker.on('progress', (_job, value) => events.push(value));
    const q = worker.bindQueue();
    const first = q.add({ reports: 1, late: true });
    // One thread: the next job runs on the same one and answers once the late report was made.
    const late = q.add({ askLate: true });
    expect(await late.result()).toBe('ignored');
    expect(events).toEqual([{ step: 0, of: 1 }]);
    expect(first.progress).toEqual({ step: 0, of: 1 });
    expect(late.progress).toBeUndefined();
  });
});
