/**
 * What qmux keeps alive, measured without flakiness: a WeakRef to each job's data (or result)
 * and a forced gc tell whether anything inside qmux still points at it. Only objects the test
 * does not hold itself are watched, so a live WeakRef means qmux retained it. Where a structural
 * fact is not reachable from outside (array capacity, per-cycle bookkeeping), retained heap bytes
 * are compared with generous bounds.
 *
 * Real timers only where gc needs them (setImmediate between gc calls); nothing sleeps.
 */
import { setMaxListeners } from 'node:events';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Topic, Worker, type JobHandle, type Queue, type PriorityQueue } from '../src/index.js';
import { Gate, flushMicrotasks } from './helpers.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Lets WeakRef targets of the current job go (they are kept until it ends), then collects. */
async function collect(): Promise<void> {
  for (let i = 0; i < 4; i++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    gc();
  }
}

/** How many of the watched objects are still alive after a full collection. */
async function alive(refs: readonly WeakRef<object>[]): Promise<number> {
  await collect();
  return refs.filter((ref) => ref.deref() !== undefined).length;
}

afterEach(() => {
  vi.useRealTimers();
});

interface Payload {
  readonly n: number;
}

/**
 * Adds `count` jobs through `add` and returns their handles and WeakRefs to their data. Kept in
 * its own function so that no local of the test holds the data.
 */
function addWatched(count: number, add: (data: Payload, i: number) => JobHandle<unknown>): { handles: JobHandle<unknown>[]; refs: WeakRef<Payload>[] } {
  const handles: JobHandle<unknown>[] = [];
  const refs: WeakRef<Payload>[] = [];
  for (let i = 0; i < count; i++) {
    const data: Payload = { n: i };
    refs.push(new WeakRef(data));
    handles.push(add(data, i));
  }
  return { handles, refs };
}

/**
 * Cancels every handle and empties the array, in a function of its own: a loop in the async test
 * itself would leave the last handle in the suspended frame's registers, alive across the await.
 */
function cancelAll(handles: JobHandle<unknown>[]): void {
  for (const handle of handles) handle.cancel();
  handles.length = 0;
}

type Kind = 'queue' | 'priority queue' | 'delayed jobs' | 'subscription';

/** A source of `kind` on `worker` and a way to add one job to it. */
function sourceOf(worker: Worker<Payload, unknown>, kind: Kind): (data: Payload, i: number) => JobHandle<unknown> {
  switch (kind) {
    case 'queue': {
      const q: Queue<Payload, unknown> = worker.bindQueue();
      return (data) => q.add(data);
    }
    case 'priority queue': {
      const pq: PriorityQueue<Payload, unknown> = worker.bindPriorityQueue();
      return (data, i) => pq.add(data, i % 7);
    }
    case 'delayed jobs': {
      const q: Queue<Payload, unknown> = worker.bindQueue();
      const options = { delay: 60_000 };
      return (data, i) => q.add(data, i % 2 === 0 ? options : undefined);
    }
    case 'subscription': {
      const topic = new Topic<Payload>();
      worker.subscribe(topic);
      return (data) => topic.publish(data)[0] as JobHandle<unknown>;
    }
  }
}

const KINDS: readonly Kind[] = ['queue', 'priority queue', 'delayed jobs', 'subscription'];

describe('cancelled waiting jobs are not kept alive', () => {
  for (const kind of KINDS) {
    it(`cancelling every waiting job of a ${kind} frees all their data`, async () => {
      const worker = new Worker<Payload, unknown>((job) => job.data, { autoRun: false });
      const { handles, refs } = addWatched(1000, sourceOf(worker, kind));
      cancelAll(handles);
      expect(worker.numPending).toBe(0);
      expect(await alive(refs)).toBe(0);
    });

    it(`cancelling most waiting jobs of a ${kind} frees the data of nearly all of them: what stays is bounded by the live jobs`, async () => {
      const worker = new Worker<Payload, unknown>((job) => job.data, { autoRun: false });
      const { handles, refs } = addWatched(1000, sourceOf(worker, kind));
      const live: JobHandle<unknown>[] = [];
      const cancelledRefs: WeakRef<Payload>[] = [];
      handles.forEach((handle, i) => {
        if (i % 100 === 99) live.push(handle);
        else {
          handle.cancel();
          cancelledRefs.push(refs[i] as WeakRef<Payload>);
        }
      });
      handles.length = 0;
      expect(worker.numPending).toBe(10);
      // 990 cancelled beside 10 live jobs: a few tombstones may wait for the next compaction,
      // no more than a small constant over the live count.
      expect(await alive(cancelledRefs)).toBeLessThanOrEqual(50);
      expect(live.every((handle) => handle.status !== 'cancelled')).toBe(true);
    });
  }

  it('jobs cancelled while the worker was busy are freed once it is idle (the issue: 805 MB held)', async () => {
    const gate = new Gate<Payload>();
    const worker = new Worker<Payload, unknown>(gate.handler, { concurrency: 1 });
    const q = worker.bindQueue();
    q.add({ n: -1 }); // takes the only slot
    await flushMicrotasks();
    const { handles, refs } = addWatched(1000, (data) => q.add(data));
    cancelAll(handles);
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(worker.status).toBe('idle');
    expect(await alive(refs)).toBe(0);
  });

  it('jobs cancelled through their AbortSignal are freed', async () => {
    const worker = new Worker<Payload, unknown>((job) => job.data, { autoRun: false });
    const q = worker.bindQueue();
    const controller = new AbortController();
    setMaxListeners(2000, controller.signal); // one listener per waiting job, on purpose
    const { handles, refs } = addWatched(1000, (data) => q.add(data, { signal: controller.signal }));
    handles.length = 0;
    controller.abort();
    expect(worker.numPending).toBe(0);
    expect(await alive(refs)).toBe(0);
  });
});
