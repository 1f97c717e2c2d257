import { describe, expect, it } from 'vitest';
import {
  CancelledError,
  InvalidStateError,
  InvariantError,
  Worker,
  type Job,
  type Picker,
  type SourceView,
  type Strategy,
  type WorkerStatus,
} from '../src/index.js';
import { Gate, flushMicrotasks, nextMacrotask } from './helpers.js';

/** A strategy whose first pick returns an ineligible entry (which halts the worker); later picks behave. */
function breaksOnce(): Strategy {
  let broken = false;
  return {
    name: 'BreaksOnce',
    create(): Picker {
      return {
        pick(list) {
          if (!broken) {
            broken = true;
            return list.find((view) => !view.eligible) as SourceView;
          }
          return list.find((view) => view.eligible) as SourceView;
        },
      };
    },
  };
}

type Call = 'start' | 'pause' | 'resume' | 'stop';

/** A worker brought into `status`, the gate its handler uses, and the lifecycle events it emitted since. */
async function workerIn(status: WorkerStatus) {
  const gate = new Gate<string>();
  const worker = new Worker(gate.handler, {
    autoRun: status !== 'initiated',
    strategy: status === 'halted' ? breaksOnce() : undefined,
  });
  const queue = worker.bindQueue();
  if (status === 'halted') {
    worker.bindQueue(); // two sources, so the strategy is asked
    queue.add('kept');
    worker.waitUntilIdle().catch(() => undefined);
  }
  if (status === 'running' || status === 'pausing' || status === 'stopping') {
    queue.add('running');
    queue.add('waiting');
  }
  await flushMicrotasks();
  if (status === 'pausing' || status === 'paused') worker.pause();
  if (status === 'stopping') void worker.stop();
  if (status === 'stopped') await worker.stop();
  expect(worker.status).toBe(status);
  const events: string[] = [];
  for (const event of ['paused', 'resumed', 'stopped', 'idle'] as const) worker.on(event, () => events.push(event));
  return { worker, gate, queue, events };
}

/** SPEC 2's table: what each call does from each status, and the status right after it. */
const TABLE: Record<WorkerStatus, Record<Call, WorkerStatus | 'throws' | 'no-op'>> = {
  initiated: { start: 'idle', pause: 'throws', resume: 'throws', stop: 'stopped' },
  idle: { start: 'no-op', pause: 'paused', resume: 'no-op', stop: 'stopped' },
  running: { start: 'no-op', pause: 'pausing', resume: 'no-op', stop: 'stopping' },
  pausing: { start: 'throws', pause: 'no-op', resume: 'running', stop: 'stopping' },
  paused: { start: 'throws', pause: 'no-op', resume: 'idle', stop: 'stopped' },
  stopping: { start: 'throws', pause: 'throws', resume: 'throws', stop: 'stopping' },
  stopped: { start: 'idle', pause: 'throws', resume: 'throws', stop: 'no-op' },
  halted: { start: 'running', pause: 'throws', resume: 'throws', stop: 'stopped' },
};

describe('the allowed-call table (SPEC 2)', () => {
  for (const [status, row] of Object.entries(TABLE) as [WorkerStatus, Record<Call, string>][]) {
    for (const [call, expected] of Object.entries(row) as [Call, string][]) {
      const what = expected === 'throws' ? 'throws InvalidStateError' : expected === 'no-op' ? 'does nothing' : `goes to ${expected}`;
      it(`${call}() from ${status} ${what}`, async () => {
        const { worker, gate, events } = await workerIn(status);
        if (expected === 'throws') {
          let thrown: unknown;
          try {
            if (call === 'stop') void worker.stop();
            else worker[call]();
          } catch (error) {
            thrown = error;
          }
          expect(thrown).toBeInstanceOf(InvalidStateError);
          expect((thrown as InvalidStateError).call).toBe(call);
          expect((thrown as InvalidStateError).status).toBe(status);
          expect((thrown as Error).message).toContain(`${call}()`);
          expect(worker.status).toBe(status);
        } else if (expected === 'no-op') {
          if (call === 'stop') await worker.stop();
          else worker[call]();
          expect(worker.status).toBe(status);
          await flushMicrotasks();
          expect(events.filter((e) => e !== 'idle')).toEqual([]);
        } else {
          if (call === 'stop') void worker.stop();
          else worker[call]();
          expect(worker.status).toBe(expected);
        }
        const stopped = worker.stop();
        gate.finishAll();
        await flushMicrotasks();
        gate.finishAll();
        await stopped;
      });
    }
  }
});

describe('the generated name', () => {
  it('is unique: it skips a name a live worker was given', () => {
    const first = new Worker(() => undefined, { autoRun: false });
    const n = Number(first.name.replace('worker-', ''));
    const named = new Worker(() => undefined, { autoRun: false, name: `worker-${n + 1}` });
    const generated = new Worker(() => undefined, { autoRun: false });
    expect(generated.name).not.toBe(named.name);
    expect(generated.name).toBe(`worker-${n + 2}`);
  });
});

describe('statuses', () => {
  it('goes initiated, idle, running, pausing, paused, running, idle, stopping, stopped', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { autoRun: false });
    const q = worker.bindQueue();
    const seen: WorkerStatus[] = [worker.status];
    worker.start();
    seen.push(worker.status);
    q.add('a');
    q.add('b');
    seen.push(worker.status); // work waits: running
    await flushMicrotasks();
    worker.pause();
    seen.push(worker.status);
    gate.finishOldest();
    await flushMicrotasks();
    seen.push(worker.status);
    worker.resume();
    seen.push(worker.status);
    await flushMicrotasks();
    gate.finishOldest();
    await flushMicrotasks();
    seen.push(worker.status);
    q.add('c');
    await flushMicrotasks();
    const stopped = worker.stop();
    seen.push(worker.status);
    gate.finishOldest();
    await stopped;
    seen.push(worker.status);
    expect(seen).toEqual(['initiated', 'idle', 'running', 'pausing', 'paused', 'running', 'idle', 'stopping', 'stopped']);
  });

  it('pause() and stop() go straight to paused / stopped when nothing runs, even with jobs waiting', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { autoRun: false });
    worker.bindQueue().add('waiting');
    worker.start();
    worker.pause(); // the pump has not run yet: nothing runs
    expect(worker.status).toBe('paused');
    await flushMicrotasks();
    expect(gate.started).toHaveLength(0);
    await worker.stop();
    expect(worker.status).toBe('stopped');
    expect(worker.numPending).toBe(1);
  });

  it('reports numPending (not started, delayed included) and numProcessing (slots in use)', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 2 });
    const q = worker.bindQueue();
    expect([worker.numPending, worker.numProcessing]).toEqual([0, 0]);
    for (let i = 0; i < 5; i++) q.add(i);
    const delayed = q.add(99, { delay: 60_000 });
    expect([worker.numPending, worker.numProcessing]).toEqual([6, 0]);
    await flushMicrotasks();
    expect([worker.numPending, worker.numProcessing]).toEqual([4, 2]);
    gate.finishOldest();
    await flushMicrotasks();
    expect([worker.numPending, worker.numProcessing]).toEqual([3, 2]);
    delayed.cancel();
    expect([worker.numPending, worker.numProcessing]).toEqual([2, 2]);
    while (gate.open.length > 0) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    expect([worker.numPending, worker.numProcessing]).toEqual([0, 0]);
    expect(worker.status).toBe('idle');
  });

  it('has a generated unique name unless given one', () => {
    const a = new Worker(() => undefined);
    const b = new Worker(() => undefined);
    expect(a.name).not.toBe(b.name);
    expect(a.name.length).toBeGreaterThan(0);
    expect(new Worker(() => undefined, { name: 'mailer' }).name).toBe('mailer');
  });
});

describe('stop() and start()', () => {
  it('stop() resolves once running jobs settle; queued jobs stay queued and run after start()', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 2 });
    const q = worker.bindQueue();
    const handles = [0, 1, 2, 3, 4].map((i) => q.add(i));
    await flushMicrotasks();
    let stopped = false;
    const stopping = worker.stop().then(() => (stopped = true));
    gate.finishOldest();
    await nextMacrotask();
    expect(stopped).toBe(false);
    expect(gate.started).toHaveLength(2); // the freed slot is not refilled
    gate.finishOldest();
    await stopping;
    expect(worker.status).toBe('stopped');
    expect(worker.numPending).toBe(3);
    expect(q.length).toBe(3);
    expect(handles.map((h) => h.status)).toEqual(['succeeded', 'succeeded', 'waiting', 'waiting', 'waiting']);

    worker.start();
    await flushMicrotasks();
    gate.finishAll();
    await flushMicrotasks();
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(gate.order).toEqual([0, 1, 2, 3, 4]);
    expect(handles.every((h) => h.status === 'succeeded')).toBe(true);
  });

  it('stop() does not abort running jobs’ signals', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler);
    worker.bindQueue().add(1);
    await flushMicrotasks();
    const stopping = worker.stop();
    expect(gate.started[0]?.job.signal.aborted).toBe(false);
    gate.finishAll();
    await stopping;
  });

  it('every stop() call made while stopping resolves when the running jobs settle', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler);
    worker.bindQueue().add(1);
    await flushMicrotasks();
    const order: string[] = [];
    const first = worker.stop().then(() => order.push('first'));
    const second = worker.stop().then(() => order.push('second'));
    await nextMacrotask();
    expect(order).toEqual([]);
    gate.finishAll();
    await Promise.all([first, second]);
    expect(order.sort()).toEqual(['first', 'second']);
  });
});

describe('waitUntilIdle', () => {
  it('resolves at once when nothing runs and nothing waits', async () => {
    const worker = new Worker(() => undefined);
    await worker.waitUntilIdle();
    const stopped = new Worker(() => undefined, { autoRun: false });
    await stopped.waitUntilIdle();
  });

  it('waits while paused with work left, and resolves after resume once the work is done', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    q.add(1);
    q.add(2);
    await flushMicrotasks();
    worker.pause();
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    gate.finishOldest();
    await nextMacrotask();
    expect(worker.status).toBe('paused');
    expect(idle).toBe(false);
    worker.resume();
    await flushMicrotasks();
    gate.finishOldest();
    await nextMacrotask();
    expect(idle).toBe(true);
  });

  it('waits while never started with work left, and resolves once started and done', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { autoRun: false });
    worker.bindQueue().add(1);
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    await nextMacrotask();
    expect(idle).toBe(false);
    worker.start();
    await flushMicrotasks();
    expect(idle).toBe(false);
    gate.finishAll();
    await nextMacrotask();
    expect(idle).toBe(true);
  });

  it('waits across stop() until start() runs the rest', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    q.add(1);
    q.add(2);
    await flushMicrotasks();
    let idle = false;
    void worker.waitUntilIdle().then(() => (idle = true));
    const stopping = worker.stop();
    gate.finishOldest();
    await stopping;
    await nextMacrotask();
    expect(worker.status).toBe('stopped');
    expect(idle).toBe(false);
    worker.start();
    await flushMicrotasks();
    gate.finishOldest();
    await nextMacrotask();
    expect(idle).toBe(true);
  });
});

describe('events', () => {
  it('emits active, completed and failed with the job (and result or error)', async () => {
    const worker = new Worker(
      (job: Job<number>) => {
        if (job.data < 0) throw new Error('negative');
        return job.data * 2;
      },
      { autoRun: false },
    );
    const q = worker.bindQueue({ name: 'numbers' });
    const log: string[] = [];
    worker.on('active', (job) => log.push(`active ${job.data} ${job.status} attempt ${job.attempt} from ${job.source}`));
    worker.on('completed', (job, result) => log.push(`completed ${job.data} -> ${result} ${job.status}`));
    worker.on('failed', (job, error) => log.push(`failed ${job.data} ${(error as Error).message} ${job.status}`));
    q.add(21);
    q.add(-1);
    worker.start();
    await worker.waitUntilIdle();
    expect(log).toEqual([
      'active 21 running attempt 1 from numbers',
      'completed 21 -> 42 succeeded',
      'active -1 running attempt 1 from numbers',
      'failed -1 negative failed',
    ]);
  });

  it('emits cancelled for a waiting job and for a running one, once each', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    const cancelled: string[] = [];
    worker.on('cancelled', (job) => cancelled.push(`${job.data}:${job.status}`));
    const running = q.add('running');
    const waiting = q.add('waiting');
    await flushMicrotasks();
    waiting.cancel();
    running.cancel();
    running.cancel();
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(cancelled).toEqual(['waiting:cancelled', 'running:cancelled']);
  });

  it('emits idle once each time the worker runs out of work', async () => {
    const worker = new Worker(() => undefined);
    const q = worker.bindQueue();
    let idle = 0;
    worker.on('idle', () => idle++);
    q.add(1);
    q.add(2);
    q.add(3);
    await worker.waitUntilIdle();
    await nextMacrotask();
    expect(idle).toBe(1);
    q.add(4);
    await worker.waitUntilIdle();
    await nextMacrotask();
    expect(idle).toBe(2);
  });

  it('emits paused, resumed and stopped when those calls take effect', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler);
    const log: string[] = [];
    for (const event of ['paused', 'resumed', 'stopped'] as const) worker.on(event, () => log.push(event));
    worker.bindQueue().add(1);
    await flushMicrotasks();
    worker.pause();
    worker.resume();
    const stopping = worker.stop();
    await nextMacrotask();
    expect(log).toEqual(['paused', 'resumed']); // stopped only once the running job settles
    gate.finishAll();
    await stopping;
    expect(log).toEqual(['paused', 'resumed', 'stopped']);
  });

  it('a listener that throws does not stop the worker (reported on error)', async () => {
    const worker = new Worker((job: Job<number>) => job.data);
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    worker.on('completed', () => {
      throw new Error('listener bug');
    });
    const q = worker.bindQueue();
    const a = q.add(1);
    const b = q.add(2);
    await worker.waitUntilIdle();
    expect([a.status, b.status]).toEqual(['succeeded', 'succeeded']);
    expect(errors).toHaveLength(2);
  });
});

describe('halted', () => {
  it('keeps waiting jobs, rejects waitUntilIdle, still takes adds, and start() recovers', async () => {
    const taken: string[] = [];
    const worker = new Worker((job: Job<string>) => void taken.push(job.data), { strategy: breaksOnce() });
    const halts: InvariantError[] = [];
    worker.on('halted', (error) => halts.push(error));
    const a = worker.bindQueue();
    worker.bindQueue();
    a.add('one');
    const pending = worker.waitUntilIdle();
    await expect(pending).rejects.toBeInstanceOf(InvariantError);
    expect(worker.status).toBe('halted');
    expect(halts).toHaveLength(1);
    await expect(worker.waitUntilIdle()).rejects.toBe(halts[0]);
    a.add('two');
    expect(worker.numPending).toBe(2);
    expect(taken).toEqual([]);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(['one', 'two']);
    expect(worker.status).toBe('idle');
  });

  it('a waiting job can still be cancelled while halted', async () => {
    const worker = new Worker(() => undefined, { strategy: breaksOnce() });
    const q = worker.bindQueue();
    worker.bindQueue();
    const handle = q.add('x');
    await worker.waitUntilIdle().catch(() => undefined);
    expect(handle.cancel()).toBe(true);
    await expect(handle.result()).rejects.toBeInstanceOf(CancelledError);
  });
});
