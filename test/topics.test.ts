import { afterEach, describe, expect, it, vi } from 'vitest';
import { QueueClosedError, QueueFullError, Strategy, Topic, Worker, type Job, type Picker } from '../src/index.js';
import { Gate, flushMicrotasks } from './helpers.js';

/** A Priority strategy that records the names in the list at every pick. */
function listRecorder(log: string[][]): Strategy {
  return {
    name: 'ListRecorder',
    create(): Picker {
      const inner = Strategy.Priority.create();
      return {
        pick(list) {
          log.push(list.map((view) => view.name));
          return inner.pick(list);
        },
      };
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Topic.publish', () => {
  it('delivers one job to every subscription, across workers, and returns one handle per delivery', async () => {
    const topic = new Topic<string>();
    const seenA: string[] = [];
    const seenB: string[] = [];
    const a = new Worker((job: Job<string>) => {
      seenA.push(`${job.source}:${job.data}`);
      return `a-${job.data}`;
    });
    const b = new Worker((job: Job<string>) => {
      seenB.push(`${job.source}:${job.data}`);
      return `b-${job.data}`;
    });
    a.subscribe(topic, { name: 'a1' });
    a.subscribe(topic, { name: 'a2' });
    b.subscribe(topic, { name: 'b1' });
    expect(topic.subscriberCount).toBe(3);

    const handles = topic.publish('hello');
    expect(handles).toHaveLength(3);
    expect(new Set(handles.map((h) => h.id)).size).toBe(3);
    expect((await Promise.all(handles.map((h) => h.result()))).sort()).toEqual(['a-hello', 'a-hello', 'b-hello']);
    expect(seenA.sort()).toEqual(['a1:hello', 'a2:hello']);
    expect(seenB).toEqual(['b1:hello']);
  });

  it('with no subscriber delivers nothing and returns an empty array', () => {
    const topic = new Topic<number>();
    expect(topic.publish(1)).toEqual([]);
    expect(topic.tryPublish(2)).toEqual([]);
    expect(topic.subscriberCount).toBe(0);
  });

  it('delivers to nobody and throws QueueFullError when one subscription is full', () => {
    const topic = new Topic<number>();
    const a = new Worker(() => undefined, { autoRun: false });
    const b = new Worker(() => undefined, { autoRun: false });
    const roomy = a.subscribe(topic, { name: 'roomy' });
    const full = b.subscribe(topic, { name: 'full', capacity: 1 });
    topic.publish(1);
    expect([roomy.length, full.length]).toEqual([1, 1]);
    expect(() => topic.publish(2)).toThrow(QueueFullError);
    expect(topic.tryPublish(3)).toBeUndefined();
    expect([roomy.length, full.length]).toEqual([1, 1]);
    expect([a.numPending, b.numPending]).toEqual([1, 1]);
  });

  it('delivers to nobody and throws QueueClosedError when one subscription is closed', () => {
    const topic = new Topic<number>();
    const worker = new Worker(() => undefined, { autoRun: false });
    const open = worker.subscribe(topic, { name: 'open' });
    const closed = worker.subscribe(topic, { name: 'closed' });
    closed.close();
    let thrown: unknown;
    try {
      topic.publish(1);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(QueueClosedError);
    expect((thrown as QueueClosedError).source).toBe('closed');
    expect(topic.tryPublish(2)).toBeUndefined();
    expect(open.length).toBe(0);
  });

  it('applies the add options to every delivery', async () => {
    vi.useFakeTimers();
    const topic = new Topic<string>();
    const ran: string[] = [];
    const worker = new Worker((job: Job<string>) => void ran.push(job.source));
    worker.subscribe(topic, { name: 's1' });
    worker.subscribe(topic, { name: 's2' });
    const handles = topic.publish('x', { delay: 100 });
    expect(handles.map((h) => h.status)).toEqual(['delayed', 'delayed']);
    await vi.advanceTimersByTimeAsync(99);
    expect(ran).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(ran.sort()).toEqual(['s1', 's2']);
  });

  it('a subscription takes its place in the list by its priority', async () => {
    const topic = new Topic<string>();
    const taken: string[] = [];
    const worker = new Worker((job: Job<string>) => void taken.push(job.source), { autoRun: false });
    const q = worker.bindQueue({ name: 'queue', priority: 2 });
    worker.subscribe(topic, { name: 'sub', priority: 1 });
    q.add('q');
    topic.publish('t');
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(['sub', 'queue']);
  });
});

describe('Topic.publish with the transfer option', () => {
  // Threads workers that never start: enough to subscribe, and no thread is made.
  const ECHO = new URL('./fixtures/threads/echo.mjs', import.meta.url);
  const threadsWorker = (name: string) => new Worker<ArrayBuffer, unknown>(ECHO, { name, autoRun: false });
  const asyncWorker = () => new Worker<ArrayBuffer, unknown>(() => undefined, { autoRun: false });

  it('with one threads subscription: delivered', () => {
    const topic = new Topic<ArrayBuffer>();
    const sub = threadsWorker('t').subscribe(topic);
    const buffer = new ArrayBuffer(8);
    expect(topic.publish(buffer, { transfer: [buffer] })).toHaveLength(1);
    expect(sub.length).toBe(1);
  });

  it('with an async subscription among threads ones: refused before anything is delivered', () => {
    const topic = new Topic<ArrayBuffer>();
    const threads = threadsWorker('t').subscribe(topic);
    const plain = asyncWorker().subscribe(topic);
    const buffer = new ArrayBuffer(8);
    expect(() => topic.publish(buffer, { transfer: [buffer] })).toThrow('qmux: add option "transfer" is for threads workers only');
    expect(() => topic.tryPublish(buffer, { transfer: [buffer] })).toThrow(TypeError);
    expect([threads.length, plain.length]).toEqual([0, 0]);
  });

  it('with two threads subscriptions: refused (one buffer cannot move into two threads), nothing delivered', () => {
    const topic = new Topic<ArrayBuffer>();
    const first = threadsWorker('t1').subscribe(topic);
    const second = threadsWorker('t2').subscribe(topic);
    const buffer = new ArrayBuffer(8);
    expect(() => topic.publish(buffer, { transfer: [buffer] })).toThrow(
      'qmux: publish option "transfer" moves the data into one thread, but the topic has 2 subscriptions',
    );
    expect([first.length, second.length]).toEqual([0, 0]);
    expect(topic.publish(buffer)).toHaveLength(2); // without transfer, each gets a copy
    expect(topic.publish(buffer, { transfer: [] })).toHaveLength(2); // moving nothing is fine
  });
});

describe('Subscription.unsubscribe', () => {
  it('stops deliveries at once; jobs already delivered still run, and it leaves the list after them', async () => {
    const topic = new Topic<string>();
    const log: string[][] = [];
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: listRecorder(log), autoRun: false });
    const sub = worker.subscribe(topic, { name: 'sub', priority: 0 });
    const q1 = worker.bindQueue({ name: 'q1', priority: 1 });
    worker.bindQueue({ name: 'q2', priority: 2 });
    const delivered = [topic.publish('m1')[0], topic.publish('m2')[0]];
    for (let i = 0; i < 3; i++) q1.add(`q${i}`);
    worker.start();
    await flushMicrotasks();
    expect(gate.order).toEqual(['m1']);

    sub.unsubscribe();
    expect(topic.subscriberCount).toBe(0);
    expect(topic.publish('m3')).toEqual([]);
    expect(sub.length).toBe(1); // m2 still waits in it

    gate.finishOldest(); // m1 done: m2 (already delivered) runs next
    await flushMicrotasks();
    expect(gate.order).toEqual(['m1', 'm2']);
    expect(log.at(-1)).toEqual(['sub', 'q1', 'q2']);

    gate.finishOldest(); // m2 done: the subscription is drained and leaves the list
    await flushMicrotasks();
    expect(gate.order).toEqual(['m1', 'm2', 'q0']);
    expect(log.at(-1)).toEqual(['q1', 'q2']);
    expect(delivered.map((h) => h?.status)).toEqual(['succeeded', 'succeeded']);

    while (gate.open.length > 0) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    await worker.waitUntilIdle();
    expect(gate.order).not.toContain('m3');
  });

  it('keeps delivering to the other subscriptions of the topic', async () => {
    const topic = new Topic<number>();
    const ran: string[] = [];
    const a = new Worker((job: Job<number>) => void ran.push(`a${job.data}`));
    const b = new Worker((job: Job<number>) => void ran.push(`b${job.data}`));
    const subA = a.subscribe(topic);
    b.subscribe(topic);
    topic.publish(1);
    subA.unsubscribe();
    subA.unsubscribe(); // a second call does nothing
    expect(topic.publish(2)).toHaveLength(1);
    await Promise.all([a.waitUntilIdle(), b.waitUntilIdle()]);
    expect(ran.sort()).toEqual(['a1', 'b1', 'b2']);
  });

  it('an idle subscription leaves the list at once', async () => {
    const topic = new Topic<number>();
    const log: string[][] = [];
    const worker = new Worker(() => undefined, { strategy: listRecorder(log) });
    const sub = worker.subscribe(topic, { name: 'sub' });
    const q1 = worker.bindQueue({ name: 'q1' });
    worker.bindQueue({ name: 'q2' });
    sub.unsubscribe();
    q1.add(1);
    await worker.waitUntilIdle();
    expect(log).toEqual([['q1', 'q2']]);
  });
});
