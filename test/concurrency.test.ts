import { describe, expect, it } from 'vitest';
import { Strategy, Worker } from '../src/index.js';
import { Gate, flushMicrotasks, nextMacrotask } from './helpers.js';

/** Finishes open jobs in a scrambled (but fixed) order until none is left, letting the worker refill. */
async function drain<T>(gate: Gate<T>): Promise<void> {
  let turn = 0;
  while (gate.open.length > 0) {
    const open = gate.open;
    (open[(turn * 7) % open.length] as { finish(): void }).finish();
    turn++;
    await flushMicrotasks();
  }
}

describe('worker concurrency', () => {
  it('never runs more jobs at once than the worker concurrency, and uses every slot', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 3 });
    const a = worker.bindQueue();
    const b = worker.bindQueue();
    for (let i = 0; i < 20; i++) (i % 2 === 0 ? a : b).add(i);
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(3);
    expect(gate.running).toBe(3);
    await drain(gate);
    await worker.waitUntilIdle();
    expect(gate.started).toHaveLength(20);
    expect(gate.maxRunning).toBe(3);
  });

  it('defaults to one job at a time', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler);
    const q = worker.bindQueue();
    for (let i = 0; i < 5; i++) q.add(i);
    await flushMicrotasks();
    expect(worker.concurrency).toBe(1);
    expect(worker.numProcessing).toBe(1);
    await drain(gate);
    expect(gate.maxRunning).toBe(1);
  });

  it('with Infinity starts every waiting job at once', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: Infinity });
    const q = worker.bindQueue();
    for (let i = 0; i < 50; i++) q.add(i);
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(50);
    expect(worker.numPending).toBe(0);
    gate.finishAll();
    await worker.waitUntilIdle();
  });

  it('counts a synchronous handler’s slot as freed at once', async () => {
    let running = 0;
    let max = 0;
    const worker = new Worker(
      () => {
        running++;
        max = Math.max(max, running);
        running--;
      },
      { concurrency: 2 },
    );
    const q = worker.bindQueue();
    for (let i = 0; i < 10; i++) q.add(i);
    await worker.waitUntilIdle();
    expect(max).toBe(1);
    expect(worker.numProcessing).toBe(0);
  });
});

describe('source concurrency', () => {
  it('never runs more of a source’s jobs than its own concurrency, while other sources fill the rest', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 5, strategy: Strategy.Priority });
    const capped = worker.bindQueue({ name: 'capped', priority: 1, concurrency: 2 });
    const single = worker.bindQueue({ name: 'single', priority: 2, concurrency: 1 });
    const free = worker.bindQueue({ name: 'free', priority: 3 });
    for (let i = 0; i < 10; i++) {
      capped.add(i);
      single.add(i);
      free.add(i);
    }
    await flushMicrotasks();
    // Work-conserving: the capped sources are passed over, the free one fills the slots.
    expect(gate.runningBySource.get('capped')).toBe(2);
    expect(gate.runningBySource.get('single')).toBe(1);
    expect(gate.runningBySource.get('free')).toBe(2);
    await drain(gate);
    await worker.waitUntilIdle();
    expect(gate.started).toHaveLength(30);
    expect(gate.maxBySource.get('capped')).toBe(2);
    expect(gate.maxBySource.get('single')).toBe(1);
    expect(gate.maxRunning).toBe(5);
  });

  it('leaves a slot free rather than exceed a source’s concurrency when no other source has work', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 4 });
    const q = worker.bindQueue({ concurrency: 2 });
    worker.bindQueue();
    for (let i = 0; i < 6; i++) q.add(i);
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(2);
    expect(worker.numPending).toBe(4);
    gate.finishOldest();
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(2);
    await drain(gate);
    expect(gate.maxRunning).toBe(2);
  });
});

describe('setConcurrency', () => {
  it('raising fills the new slots before the next macrotask', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 1 });
    const q = worker.bindQueue();
    for (let i = 0; i < 10; i++) q.add(i);
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(1);

    worker.setConcurrency(4);
    expect(worker.concurrency).toBe(4);
    // Read from a macrotask queued right after the call: the slots must already be filled.
    const seenInMacrotask = await new Promise<number>((resolve) => setImmediate(() => resolve(worker.numProcessing)));
    expect(seenInMacrotask).toBe(4);
    expect(gate.order).toEqual([0, 1, 2, 3]);

    worker.setConcurrency(6);
    await flushMicrotasks(3);
    expect(worker.numProcessing).toBe(6);
    gate.finishAll();
    await drain(gate);
    expect(gate.maxRunning).toBe(6);
  });

  it('lowering never interrupts running jobs, and new starts wait until in-flight is below it', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 3 });
    const q = worker.bindQueue();
    for (let i = 0; i < 6; i++) q.add(i);
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(3);

    worker.setConcurrency(1);
    await nextMacrotask();
    expect(worker.numProcessing).toBe(3);
    expect(gate.started.every((s) => !s.job.signal.aborted)).toBe(true);

    gate.finishOldest();
    await nextMacrotask();
    expect(gate.started).toHaveLength(3); // 2 still run: above 1, nothing starts
    gate.finishOldest();
    await nextMacrotask();
    expect(gate.started).toHaveLength(3); // 1 runs: at 1, nothing starts
    gate.finishOldest();
    await nextMacrotask();
    expect(gate.started).toHaveLength(4); // 0 ran, so one starts
    expect(worker.numProcessing).toBe(1);

    const maxAfterLowering = { value: 0 };
    while (gate.open.length > 0) {
      maxAfterLowering.value = Math.max(maxAfterLowering.value, gate.running);
      gate.finishOldest();
      await flushMicrotasks();
    }
    await worker.waitUntilIdle();
    expect(maxAfterLowering.value).toBe(1);
    expect(gate.started).toHaveLength(6);
  });

  it('raising while paused starts nothing until resume', async () => {
    const gate = new Gate<number>();
    const worker = new Worker(gate.handler, { concurrency: 1 });
    const q = worker.bindQueue();
    for (let i = 0; i < 5; i++) q.add(i);
    await flushMicrotasks();
    worker.pause();
    worker.setConcurrency(5);
    await nextMacrotask();
    expect(worker.numProcessing).toBe(1);
    worker.resume();
    await flushMicrotasks();
    expect(worker.numProcessing).toBe(5);
    gate.finishAll();
    await worker.waitUntilIdle();
  });
});
