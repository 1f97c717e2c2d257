/**
 * Keys (SPEC 10): one queue split by a key, taking turns between keys, with caps, weights and
 * pauses per key. Every test runs on fake timers (which also fake the clock qmux reads).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueueFullError, Strategy, Topic, Worker, type Job, type PriorityQueue, type Picker, type Queue, type SourceView } from '../src/index.js';
import { KeyHeap } from '../src/core/keys/key-heap.js';
import { Gate, flushMicrotasks } from './helpers.js';

const T0 = Date.UTC(2030, 0, 1);

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

interface Task {
  tenant: string | number;
  n?: number;
}

/** The keys of the jobs a gate started, in start order. */
function keysOf(gate: Gate<Task>): (string | undefined)[] {
  return gate.started.map((s) => s.job.key);
}

/** Finishes the open jobs one by one, oldest first, letting the worker refill after each. */
async function drain(gate: Gate<Task>): Promise<void> {
  await flushMicrotasks();
  while (gate.open.length > 0) {
    gate.finishOldest();
    await flushMicrotasks();
  }
}

function manual(concurrency = 1) {
  const gate = new Gate<Task>();
  const worker = new Worker(gate.handler, { concurrency, autoRun: false });
  return { gate, worker };
}

const byTenant = (data: Task) => data.tenant;

describe('binding a keyed queue', () => {
  it('takes keys on bindQueue and bindPriorityQueue, not on subscribe', () => {
    const worker = new Worker((_job: Job<Task>) => undefined, { autoRun: false });
    expect(worker.bindQueue({ keys: {} }).keyCount).toBe(0);
    expect(worker.bindPriorityQueue({ keys: { by: byTenant } }).keyCount).toBe(0);
    expect(() => worker.subscribe(new Topic<Task>(), { keys: {} } as never)).toThrow(TypeError);
  });

  it('checks every field of keys at bind, naming it', () => {
    const worker = new Worker((_job: Job<Task>) => undefined, { autoRun: false });
    const bind = (keys: unknown) => () => worker.bindQueue({ keys: keys as never });
    expect(bind(5)).toThrow(/"keys" must be an object/);
    expect(bind({ concurency: 2 })).toThrow(/unknown field "concurency" in bind option "keys"/);
    expect(bind({ by: 'tenant' })).toThrow(/"keys.by" must be a function/);
    expect(bind({ weight: 3 })).toThrow(/"keys.weight" must be a function/);
    expect(bind({ concurrency: 0 })).toThrow(RangeError);
    expect(bind({ concurrency: 0 })).toThrow(/"keys.concurrency"/);
    expect(bind({ capacity: -1 })).toThrow(/"keys.capacity"/);
    expect(bind({ rateLimit: { limit: 0, interval: 10 } })).toThrow(/"keys.rateLimit.limit"/);
    expect(bind({ rateLimit: { limit: 1, interval: 0 } })).toThrow(/"keys.rateLimit.interval"/);
    expect(bind({ rateLimit: { limit: 1, per: 10 } })).toThrow(/unknown field "per"/);
  });
});

describe('the key of a job', () => {
  it('is the add option key when given, else keys.by(data), compared as String(key)', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.add({ tenant: 'acme' });
    q.add({ tenant: 'acme' }, { key: 'vip' });
    q.add({ tenant: 7 });
    q.add({ tenant: 'x' }, { key: 7 });
    q.add({ tenant: 'acme' }, { key: undefined });
    q.add({ tenant: 'acme' }, { key: null as never });
    expect(q.keyCount).toBe(3);
    expect(q.keyStats('7').waiting).toBe(2);
    expect(q.keyStats(7).waiting).toBe(2);
    expect(q.keyStats('acme').waiting).toBe(3);
    worker.start();
    await drain(gate);
    expect(keysOf(gate).sort()).toEqual(['7', '7', 'acme', 'acme', 'acme', 'vip']);
  });

  it('must be a string or a finite number: anything else is a TypeError naming key, and adds nothing', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ keys: { by: (data: Task) => data.tenant } });
    for (const key of [{}, Number.NaN, Infinity, true, Symbol('s'), 1n]) {
      expect(() => q.add({ tenant: 'a' }, { key: key as never })).toThrow(TypeError);
      expect(() => q.add({ tenant: 'a' }, { key: key as never })).toThrow(/add option "key"/);
      expect(() => q.add({ tenant: key as never })).toThrow(/"key"/);
    }
    expect(q.length).toBe(0);
    expect(q.keyCount).toBe(0);
  });

  it('a number and its String() are one key, whichever came first; NaN and Infinity stay refused while keys named so are active', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ keys: { by: (data: Task) => data.tenant } });
    q.add({ tenant: '5' });
    q.add({ tenant: 5 });
    q.add({ tenant: 0 });
    q.add({ tenant: -0 });
    q.add({ tenant: '0' });
    q.add({ tenant: 1e21 });
    q.add({ tenant: '1e+21' });
    q.add({ tenant: '05' }); // not String(5): a key of its own
    q.add({ tenant: 'NaN' });
    q.add({ tenant: 'Infinity' });
    expect(q.keyCount).toBe(6);
    expect(q.keyStats(5).waiting).toBe(2);
    expect(q.keyStats('0').waiting).toBe(3);
    expect(q.keyStats(1e21).waiting).toBe(2);
    expect(q.keyStats('05').waiting).toBe(1);
    const jobs = [q.add({ tenant: 5 }), q.add({ tenant: '5' })];
    expect(jobs.map((job) => (job as unknown as Job<Task>).key)).toEqual(['5', '5']);
    for (const key of [Number.NaN, Infinity, -Infinity]) {
      expect(() => q.add({ tenant: 'a' }, { key: key as never })).toThrow(TypeError);
      expect(() => q.add({ tenant: key as never })).toThrow(/"key"/);
    }
    expect(q.keyCount).toBe(6);
  });

  it('a number new to the queue is one key however it arrives: twice in one addAll, after a refused add, from inside keys.weight', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ capacity: 3, keys: { by: (data: Task) => data.tenant } });
    q.addAll([{ tenant: 7 }, { tenant: 7 }]);
    expect(q.keyCount).toBe(1);
    expect(q.keyStats(7).waiting).toBe(2);
    q.add({ tenant: 8 });
    expect(() => q.add({ tenant: 9 })).toThrow(QueueFullError); // 9 was looked up, and is not active
    q.purge({ key: 7 });
    q.add({ tenant: '9' });
    q.add({ tenant: 9 });
    expect(q.keyCount).toBe(2);
    expect(q.keyStats(9).waiting).toBe(2);

    let inside = false;
    const weighted = worker.bindQueue({
      keys: {
        by: (data: Task) => data.tenant,
        weight: (key) => {
          if (key === '3' && !inside) {
            inside = true;
            weighted.add({ tenant: 3 }); // makes key 3 active while the outer add is under way
          }
          return 1;
        },
      },
    });
    weighted.add({ tenant: 3 });
    expect(weighted.keyCount).toBe(1);
    expect(weighted.keyStats(3).waiting).toBe(2);
  });

  it('is required: no key option and no keys.by is a TypeError', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ keys: {} });
    expect(() => q.add({ tenant: 'a' })).toThrow(TypeError);
    expect(() => q.add({ tenant: 'a' })).toThrow(/"key"/);
    expect(q.add({ tenant: 'a' }, { key: 'a' }).status).toBe('waiting');
  });

  it('a keys.by that throws makes add throw its error and adds nothing; addAll is all or nothing', () => {
    const { worker } = manual();
    const boom = new Error('no tenant');
    const q = worker.bindQueue({
      keys: {
        by: (data: Task) => {
          if (data.tenant === 'bad') throw boom;
          return data.tenant;
        },
      },
    });
    expect(() => q.add({ tenant: 'bad' })).toThrow(boom);
    expect(() => q.addAll([{ tenant: 'a' }, { tenant: 'bad' }])).toThrow(boom);
    expect(() => q.addAll([{ tenant: 'a' }, { tenant: {} as never }])).toThrow(TypeError);
    expect(() => q.tryAdd({ tenant: 'bad' })).toThrow(boom);
    expect(q.length).toBe(0);
    expect(q.keyCount).toBe(0);
    expect(worker.stats().counters.added).toBe(0);
    const group = q.addAll([{ tenant: 'a' }, { tenant: 'b' }, { tenant: 'a' }]);
    expect(group.handles.map((h) => (h as unknown as Job<Task>).key)).toEqual(['a', 'b', 'a']);
    expect(q.keyCount).toBe(2);
  });

  it('a key option on a queue without keys, or on publish, is a TypeError', () => {
    const { worker } = manual();
    // Typed as a queue whose keys are not known (the types reject these calls on a plain queue).
    const plain: Queue<Task> = worker.bindQueue();
    expect(() => plain.add({ tenant: 'a' }, { key: 'a' })).toThrow(TypeError);
    expect(() => plain.add({ tenant: 'a' }, { key: 'a' })).toThrow(/"key".*keys/);
    const pq: PriorityQueue<Task> = worker.bindPriorityQueue();
    expect(() => pq.add({ tenant: 'a' }, 1, { key: 'a' })).toThrow(TypeError);
    const topic = new Topic<Task>();
    worker.subscribe(topic);
    expect(() => topic.publish({ tenant: 'a' }, { key: 'a' } as never)).toThrow(TypeError);
    expect(plain.length + pq.length).toBe(0);
  });

  it('is on the job in the handler, in events and in a dead letter; redrive keeps it', async () => {
    const seen: (string | undefined)[] = [];
    const worker = new Worker(
      (job: Job<Task>) => {
        seen.push(job.key);
        throw new Error('fails');
      },
      { autoRun: false },
    );
    const active: (string | undefined)[] = [];
    const dead: (string | undefined)[] = [];
    worker.on('active', (job) => active.push(job.key));
    worker.on('dead', (job) => dead.push(job.key));
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.add({ tenant: 'acme' });
    worker.start();
    await vi.runAllTimersAsync();
    expect(seen).toEqual(['acme']);
    expect(active).toEqual(['acme']);
    expect(dead).toEqual(['acme']);
    const entry = worker.deadLetters[0];
    expect(entry?.key).toBe('acme');
    const again = worker.redrive(entry as NonNullable<typeof entry>);
    expect((again as unknown as Job<Task>).key).toBe('acme');
    await vi.runAllTimersAsync();
    expect(seen).toEqual(['acme', 'acme']);
  });

  it('a retried job keeps its key', async () => {
    const keys: (string | undefined)[] = [];
    let calls = 0;
    const worker = new Worker(
      (job: Job<Task>) => {
        keys.push(job.key);
        if (++calls === 1) throw new Error('once');
      },
      { retry: { attempts: 2, backoff: { type: 'fixed', delay: 10 } } },
    );
    const q = worker.bindQueue({ keys: { by: byTenant } });
    const handle = q.add({ tenant: 't1' });
    await vi.runAllTimersAsync();
    expect(handle.status).toBe('succeeded');
    expect(keys).toEqual(['t1', 't1']);
    expect(q.keyCount).toBe(0);
  });

  it('jobs of a plain queue have no key', async () => {
    const gate = new Gate<Task>();
    const worker = new Worker(gate.handler);
    worker.bindQueue().add({ tenant: 'a' });
    await flushMicrotasks();
    expect(gate.started[0]?.job.key).toBeUndefined();
  });
});

describe('turn order', () => {
  it('a tenant with many jobs delays another tenant’s first job by one turn, not by all its jobs', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    for (let n = 0; n < 100; n++) q.add({ tenant: 'big', n });
    q.add({ tenant: 'small', n: 0 });
    q.add({ tenant: 'small', n: 1 });
    worker.start();
    await drain(gate);
    expect(keysOf(gate).slice(0, 6)).toEqual(['big', 'small', 'big', 'small', 'big', 'big']);
    // FIFO within a key
    const big = gate.started.filter((s) => s.job.key === 'big').map((s) => s.data.n);
    expect(big).toEqual([...Array(100).keys()]);
  });

  it('round-robin among keys in the order they became active; a new key joins the end', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    for (const t of ['a', 'b', 'c']) for (let n = 0; n < 3; n++) q.add({ tenant: t, n });
    worker.start();
    await flushMicrotasks();
    expect(keysOf(gate)).toEqual(['a']);
    q.add({ tenant: 'd', n: 0 });
    q.add({ tenant: 'd', n: 1 });
    await drain(gate);
    expect(keysOf(gate)).toEqual(['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd', 'a', 'b', 'c']);
  });

  it('a key that is not eligible is skipped without spending a turn, and keeps its place', async () => {
    // b is paused when its turn comes: the turn goes on to c. Resumed, b is back at its place,
    // between a and c: its turn comes when the turn order next passes it (as RoundRobin skips a
    // source, SPEC 4).
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    for (const t of ['a', 'b', 'c']) for (let n = 0; n < 2; n++) q.add({ tenant: t, n });
    q.pauseKey('b');
    worker.start();
    await flushMicrotasks();
    gate.finishOldest();
    await flushMicrotasks();
    expect(keysOf(gate)).toEqual(['a', 'c']);
    q.resumeKey('b');
    await drain(gate);
    expect(keysOf(gate)).toEqual(['a', 'c', 'a', 'b', 'c', 'b']);
  });

  it('a key at its keys.concurrency waits outside the turn order and rejoins it when its slot frees', async () => {
    const { gate, worker } = manual(2);
    const q = worker.bindQueue({ keys: { by: byTenant, concurrency: 1 } });
    for (const t of ['a', 'b', 'c']) for (let n = 0; n < 2; n++) q.add({ tenant: t, n });
    worker.start();
    await flushMicrotasks();
    expect(keysOf(gate)).toEqual(['a', 'b']);
    gate.started[1]?.finish(); // b done: a is capped, so c goes
    await flushMicrotasks();
    expect(keysOf(gate)).toEqual(['a', 'b', 'c']);
    await drain(gate); // a finishes first: after c, the turn order comes round to a, then b
    expect(keysOf(gate)).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });

  it('a key keeps the place it took when it became active, whatever it waits for meanwhile', async () => {
    // Paused and resumed before anything started: still first.
    {
      const { gate, worker } = manual();
      const q = worker.bindQueue({ keys: { by: byTenant } });
      for (const t of ['a', 'b', 'c']) for (let n = 0; n < 2; n++) q.add({ tenant: t, n });
      q.pauseKey('a');
      q.resumeKey('a');
      worker.start();
      await drain(gate);
      expect(keysOf(gate)).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    }
    // Paused before its jobs arrived: it became active then, first of all.
    {
      const { gate, worker } = manual();
      const q = worker.bindQueue({ keys: { by: byTenant } });
      q.pauseKey('z');
      for (const t of ['a', 'b', 'z']) for (let n = 0; n < 2; n++) q.add({ tenant: t, n });
      q.resumeKey('z');
      worker.start();
      await drain(gate);
      expect(keysOf(gate)).toEqual(['z', 'a', 'b', 'z', 'a', 'b']);
    }
    // Its jobs were delayed: active from their add, between a and c.
    {
      const { gate, worker } = manual();
      const q = worker.bindQueue({ keys: { by: byTenant } });
      q.add({ tenant: 'a', n: 0 });
      q.add({ tenant: 'b', n: 0 }, { delay: 10 });
      q.add({ tenant: 'c', n: 0 });
      q.add({ tenant: 'a', n: 1 });
      q.add({ tenant: 'c', n: 1 });
      q.add({ tenant: 'b', n: 1 }, { delay: 10 });
      await vi.advanceTimersByTimeAsync(10);
      worker.start();
      await drain(gate);
      expect(keysOf(gate)).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    }
    // Nothing due for a while, but still active (its job runs): it does not fall behind b.
    {
      const { gate, worker } = manual(2);
      const q = worker.bindQueue({ keys: { by: byTenant } });
      q.add({ tenant: 'a', n: 0 });
      for (const t of ['b', 'c']) for (let n = 0; n < 2; n++) q.add({ tenant: t, n });
      worker.start();
      await flushMicrotasks();
      expect(keysOf(gate)).toEqual(['a', 'b']);
      q.add({ tenant: 'a', n: 1 });
      await drain(gate);
      expect(keysOf(gate)).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    }
  });

  it('orders jobs by priority within their key only, in a priority queue', async () => {
    const { gate, worker } = manual();
    const pq = worker.bindPriorityQueue({ keys: { by: byTenant } });
    pq.add({ tenant: 'a', n: 1 }, 5);
    pq.add({ tenant: 'a', n: 2 }, 1);
    pq.add({ tenant: 'b', n: 3 }, 9);
    pq.add({ tenant: 'b', n: 4 }, 0);
    worker.start();
    await drain(gate);
    expect(gate.started.map((s) => s.data.n)).toEqual([2, 4, 1, 3]);
  });

  it('a keyed queue takes turns with other sources as one source', async () => {
    const { gate, worker } = manual();
    const keyed = worker.bindQueue({ priority: 2, keys: { by: byTenant } });
    const urgent = worker.bindQueue({ priority: 1 });
    keyed.add({ tenant: 'a', n: 1 });
    urgent.add({ tenant: 'u', n: 2 });
    worker.start();
    await drain(gate);
    expect(gate.started.map((s) => s.data.n)).toEqual([2, 1]);
  });
});

describe('eligibility of keys', () => {
  it('never runs more jobs of a key than keys.concurrency, and runs other keys meanwhile', async () => {
    const { gate, worker } = manual(10);
    const q = worker.bindQueue({ keys: { by: byTenant, concurrency: 2 } });
    for (let n = 0; n < 20; n++) q.add({ tenant: n < 15 ? 'big' : `k${n}`, n });
    worker.start();
    await flushMicrotasks();
    expect(gate.running).toBe(7); // 2 of big, 5 single-job keys
    expect(q.keyStats('big')).toEqual({ waiting: 13, due: 13, delayed: 0, running: 2, paused: false });
    let max = 0;
    while (gate.open.length > 0) {
      max = Math.max(max, gate.open.filter((s) => s.job.key === 'big').length);
      gate.finishOldest();
      await flushMicrotasks();
    }
    expect(max).toBe(2);
    expect(gate.started).toHaveLength(20);
  });

  it('the queue’s own concurrency still bounds the queue as a whole', async () => {
    const { gate, worker } = manual(10);
    const q = worker.bindQueue({ concurrency: 3, keys: { by: byTenant, concurrency: 2 } });
    for (let n = 0; n < 12; n++) q.add({ tenant: `k${n % 4}`, n });
    worker.start();
    await flushMicrotasks();
    expect(gate.running).toBe(3);
    await drain(gate);
    expect(gate.maxRunning).toBe(3);
  });

  it('keys.rateLimit limits each key’s starts, and the worker wakes by itself when a window opens', async () => {
    const starts: [string | undefined, number][] = [];
    const worker = new Worker((job: Job<Task>) => void starts.push([job.key, Date.now() - T0]), { concurrency: 4 });
    const q = worker.bindQueue({ keys: { by: byTenant, rateLimit: { limit: 2, interval: 1000 } } });
    for (let n = 0; n < 4; n++) q.add({ tenant: 'a', n });
    q.add({ tenant: 'b', n: 9 });
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([
      ['a', 0],
      ['b', 0],
      ['a', 0],
    ]);
    await vi.advanceTimersByTimeAsync(999);
    expect(starts).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts.slice(3)).toEqual([
      ['a', 1000],
      ['a', 1000],
    ]);
    // a's window still holds starts: it is remembered until they leave it, then forgotten (b's
    // start at 0 left its window at 1000).
    expect(q.keyCount).toBe(1);
    expect(q.keyStats('a')).toEqual({ waiting: 0, due: 0, delayed: 0, running: 0, paused: false });
    await vi.advanceTimersByTimeAsync(2000);
    expect(q.keyCount).toBe(0); // its memory goes lazily, but keyCount counts only active keys
  });

  it('keyCount on an idle worker does not count a rate-limited key whose last start has left its window', async () => {
    const worker = new Worker((_job: Job<Task>) => undefined);
    const keys = { by: byTenant, rateLimit: { limit: 2, interval: 30 } };
    const check = async (q: { readonly keyCount: number; keyStats(key: string): unknown }, add: () => unknown): Promise<void> => {
      add();
      await worker.waitUntilIdle();
      expect(q.keyCount).toBe(1); // its start is inside the window: still active
      await vi.advanceTimersByTimeAsync(100); // nothing asks the core meanwhile
      expect(q.keyCount).toBe(0);
      expect(q.keyStats('a')).toEqual({ waiting: 0, due: 0, delayed: 0, running: 0, paused: false });
    };
    const queue = worker.bindQueue({ keys });
    await check(queue, () => queue.add({ tenant: 'a' }));
    const pq = worker.bindPriorityQueue({ keys });
    await check(pq, () => pq.add({ tenant: 'a' }, 1));
  });

  it('a delayed job of a key wakes the worker when it comes due', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.add({ tenant: 'a', n: 1 }, { delay: 500 });
    expect(q.keyStats('a')).toEqual({ waiting: 1, due: 0, delayed: 1, running: 0, paused: false });
    worker.start();
    await vi.advanceTimersByTimeAsync(499);
    expect(gate.started).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(gate.started.map((s) => s.data.n)).toEqual([1]);
  });

  it('keyStats counts a delayed job whose time has passed as due, though every slot is busy and no pass has run', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.add({ tenant: 'a', n: 1 }); // takes the only slot
    q.add({ tenant: 'b', n: 2 }, { delay: 10 });
    worker.start();
    await vi.advanceTimersByTimeAsync(40);
    expect(gate.started).toHaveLength(1);
    expect(q.keyStats('b')).toEqual({ waiting: 1, due: 1, delayed: 0, running: 0, paused: false });
    expect(worker.stats().sources[q.name]).toMatchObject({ waiting: 1, due: 1, delayed: 0 });
    gate.finishAll();
    await vi.advanceTimersByTimeAsync(0);
    expect(gate.started.map((started) => started.data.n)).toEqual([1, 2]);
  });

  it('pauseKey holds a key’s jobs back, resumeKey wakes the worker; other keys go on', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.pauseKey('a');
    expect(q.keyCount).toBe(1); // a paused key is remembered before its jobs arrive
    expect(q.keyStats('a')).toEqual({ waiting: 0, due: 0, delayed: 0, running: 0, paused: true });
    q.add({ tenant: 'a', n: 1 });
    q.add({ tenant: 'b', n: 2 });
    worker.start();
    await drain(gate);
    expect(gate.started.map((s) => s.data.n)).toEqual([2]);
    expect(q.length).toBe(1);
    expect(worker.stats().sources[q.name]?.waiting).toBe(1);
    q.resumeKey('a');
    await drain(gate);
    expect(gate.started.map((s) => s.data.n)).toEqual([2, 1]);
    expect(q.keyCount).toBe(0);
  });

  it('SourceView.length is the due jobs of keys that are not paused', async () => {
    const lengths: number[] = [];
    const spy: Picker = {
      pick(list: readonly SourceView[]): SourceView {
        lengths.push(list[0]?.length ?? -1);
        return list.find((view) => view.eligible) as SourceView;
      },
    };
    const gate = new Gate<Task>();
    const worker = new Worker(gate.handler, { autoRun: false, strategy: { name: 'Spy', create: () => spy } });
    const q = worker.bindQueue({ keys: { by: byTenant } });
    worker.bindQueue();
    q.add({ tenant: 'a' });
    q.add({ tenant: 'a' });
    q.add({ tenant: 'b' });
    q.add({ tenant: 'c' }, { delay: 100 });
    q.pauseKey('a');
    worker.start();
    await flushMicrotasks();
    expect(lengths[0]).toBe(1);
  });
});

/** The largest |starts of a key − its share| over the prefixes of `order` (shares by `weights`). */
function worstPrefixDeviation(order: readonly string[], weights: Record<string, number>): number {
  const total = Object.values(weights).reduce((sum, weight) => sum + weight, 0);
  const counts = new Map<string, number>();
  let worst = 0;
  order.forEach((key, i) => {
    counts.set(key, (counts.get(key) ?? 0) + 1);
    for (const [name, weight] of Object.entries(weights)) {
      worst = Math.max(worst, Math.abs((counts.get(name) ?? 0) - ((i + 1) * weight) / total));
    }
  });
  return worst;
}

describe('weights', () => {
  /** Runs `jobs` per key at concurrency 1 and returns the keys in start order. */
  async function weightedRun(weights: Record<string, number>, jobs: number): Promise<string[]> {
    const order: string[] = [];
    const worker = new Worker((job: Job<Task>) => void order.push(job.key as string), { autoRun: false });
    const q = worker.bindQueue({ keys: { by: byTenant, weight: (key) => weights[key] as number } });
    for (let n = 0; n < jobs; n++) for (const key of Object.keys(weights)) q.add({ tenant: key, n });
    worker.start();
    await vi.runAllTimersAsync();
    return order;
  }

  it('weights far apart (1 and 1e-17) leave the turns fair for the keys that come after them', async () => {
    const weights: Record<string, number> = { x: 1, bg: 1e-17, a: 1, b: 1, c: 1 };
    const order: string[] = [];
    const worker = new Worker((job: Job<Task>) => void order.push(job.key as string), { autoRun: false });
    const q = worker.bindQueue({ keys: { by: byTenant, weight: (key) => weights[key] as number } });
    q.add({ tenant: 'x', n: 0 });
    q.add({ tenant: 'bg', n: 0 });
    q.add({ tenant: 'bg', n: 1 });
    worker.start();
    await vi.runAllTimersAsync();
    expect(order).toEqual(['x', 'bg', 'bg']);
    order.length = 0;
    // Later, three keys of equal weight, while a key of the tiny weight still waits too.
    worker.pause();
    q.add({ tenant: 'bg', n: 2 });
    for (let n = 0; n < 6; n++) for (const key of ['a', 'b', 'c']) q.add({ tenant: key, n });
    worker.resume();
    await vi.runAllTimersAsync();
    // Until a key runs out (the eligible set stays), every prefix within 3 of each key's share.
    expect(worstPrefixDeviation(order.slice(0, 15), { bg: 1e-17, a: 1, b: 1, c: 1 })).toBeLessThan(3);
    expect(order).toHaveLength(19);
  });

  it('a key of a tiny weight alone for a while does not leave later keys of ordinary weights taking turns in bursts', async () => {
    const weights: Record<string, number> = { bg: 1e-15, a: 1, b: 2 };
    const order: string[] = [];
    const worker = new Worker((job: Job<Task>) => void order.push(job.key as string), { autoRun: false });
    const q = worker.bindQueue({ keys: { by: byTenant, weight: (key) => weights[key] as number } });
    for (let n = 0; n < 50; n++) q.add({ tenant: 'bg', n });
    worker.start();
    await vi.runAllTimersAsync();
    order.length = 0;
    worker.pause();
    q.add({ tenant: 'bg', n: 50 });
    for (let n = 0; n < 30; n++) for (const key of ['a', 'b']) q.add({ tenant: key, n });
    worker.resume();
    await vi.runAllTimersAsync();
    // b (weight 2) takes about two starts for each of a's; bg's share is next to nothing.
    expect(worstPrefixDeviation(order.slice(0, 40), { bg: 1e-15, a: 1, b: 2 })).toBeLessThan(3);
  });

  it('gives each key starts in proportion to its weight, within 3 over any run', async () => {
    const weights = { a: 5, b: 3, c: 1, d: 1, e: 0.5 };
    const total = Object.values(weights).reduce((sum, w) => sum + w, 0);
    const order = await weightedRun(weights, 400);
    // While every key still has jobs waiting (the eligible set does not change: a, the first to
    // run out, has 400 jobs for ~840 starts), any window of starts.
    const prefix = order.slice(0, 700);
    let worst = 0;
    for (let from = 0; from < prefix.length; from += 7) {
      for (let to = from + 1; to <= prefix.length; to += 13) {
        const n = to - from;
        for (const [key, w] of Object.entries(weights)) {
          const count = prefix.slice(from, to).filter((k) => k === key).length;
          worst = Math.max(worst, Math.abs(count - (n * w) / total));
        }
      }
    }
    expect(worst).toBeLessThan(3);
    expect(prefix.length).toBeGreaterThan(300);
  });

  // Any positive finite weight is allowed (SPEC 10): the turn order's arithmetic must neither
  // overflow nor lose its proportions at the ends of the range of doubles.
  it('runs every job of keys whose weights are at the ends of the range (down to 5e-324, up to 1.7e308), in proportion where doubles can tell', async () => {
    for (const weights of [
      { tiny: 1e-308 },
      { tiny: 5e-324 },
      { a: 5e-324, b: 5e-324 },
      { tiny: 2e-308, one: 1 },
      { tiny: 5e-324, one: 1, huge: 1.7e308 },
    ] as Record<string, number>[]) {
      const order = await weightedRun(weights, 10);
      expect(order, JSON.stringify(weights)).toHaveLength(10 * Object.keys(weights).length);
    }
    // A key next to one 1e308 times heavier runs once the heavy one has nothing left.
    expect(await weightedRun({ tiny: 1e-308, one: 1 }, 3)).toEqual(['one', 'one', 'one', 'tiny', 'tiny', 'tiny']);
  });

  it('a key of a huge weight joining keys of tiny ones, and a key leaving and coming back meanwhile, still run every job', async () => {
    for (const [light, heavy] of [
      [1e-305, 1e7],
      [5e-324, 1.7e308],
    ] as const) {
      const order: string[] = [];
      const worker = new Worker((job: Job<Task>) => void order.push(job.key as string), { autoRun: false });
      const weights: Record<string, number> = { a: light, h: heavy };
      const q = worker.bindQueue({ keys: { by: byTenant, weight: (key) => weights[key] as number } });
      for (let n = 0; n < 3; n++) q.add({ tenant: 'a', n });
      for (let n = 0; n < 3; n++) q.add({ tenant: 'h', n });
      q.pauseKey('a');
      q.resumeKey('a');
      worker.start();
      await vi.runAllTimersAsync();
      expect(worker.health().status, `${light} and ${heavy}`).toBe('healthy');
      expect(order).toEqual(['h', 'h', 'h', 'a', 'a', 'a']);
    }
  });

  it('a key far heavier than the others that keeps leaving and coming back does not make each start walk every key', async () => {
    // 2,000 keys of weight 1 and one of 1e100 capped at one job at a time: each of its starts
    // takes it out of the turn order and back. Counted in visits of keys, not in time.
    const worker = new Worker((_job: Job<Task>) => undefined, { autoRun: false });
    const weights: Record<string, number> = { h: 1e100 };
    let asked = 0;
    const q = worker.bindQueue({
      keys: { by: byTenant, concurrency: 1, weight: (key) => (asked++, weights[key] ?? 1) },
    });
    for (let k = 0; k < 2000; k++) q.add({ tenant: `k${k}` });
    for (let n = 0; n < 200; n++) q.add({ tenant: 'h', n });
    let visits = 0;
    const forEach = KeyHeap.prototype.forEach;
    const spy = vi.spyOn(KeyHeap.prototype, 'forEach').mockImplementation(function (this: KeyHeap, visit) {
      forEach.call(this, (key) => {
        visits++;
        visit(key);
      });
    });
    try {
      worker.start();
      await vi.runAllTimersAsync();
    } finally {
      spy.mockRestore();
    }
    expect(q.keyCount).toBe(0);
    expect(asked).toBe(2001);
    expect(visits).toBeLessThan(50_000); // a walk of every ready key per start of h would be 400,000 and more
  });

  it('keeps the proportions of weights that are all tiny alike (1e-306 and 2e-306) over a long run', async () => {
    // The virtual time runs 1e306 per start here: past a few hundred starts it would overflow.
    const weights = { a: 1e-306, b: 2e-306 };
    const order = await weightedRun(weights, 2000);
    expect(order).toHaveLength(4000);
    expect(worstPrefixDeviation(order.slice(0, 2900), weights)).toBeLessThan(3);

    // The same once a key of weight 1 (next to which theirs are nothing) has left the turn order.
    const after: string[] = [];
    const worker = new Worker((job: Job<Task>) => void after.push(job.key as string), { autoRun: false });
    const all: Record<string, number> = { one: 1, ...weights };
    const q = worker.bindQueue({ keys: { by: byTenant, weight: (key) => all[key] as number } });
    for (let n = 0; n < 5; n++) q.add({ tenant: 'one', n });
    for (let n = 0; n < 2000; n++) for (const key of ['a', 'b']) q.add({ tenant: key, n });
    worker.start();
    await vi.runAllTimersAsync();
    expect(after.slice(0, 5)).toEqual(['one', 'one', 'one', 'one', 'one']);
    expect(after).toHaveLength(4005);
    expect(worstPrefixDeviation(after.slice(5, 2905), weights)).toBeLessThan(3);
  });

  it('is deterministic', async () => {
    const weights = { x: 2, y: 7, z: 3 };
    expect(await weightedRun(weights, 50)).toEqual(await weightedRun(weights, 50));
  });

  it('calls keys.weight with String(key) each time the key becomes active', async () => {
    const calls: unknown[] = [];
    const worker = new Worker((_job: Job<Task>) => undefined, { autoRun: false });
    const q = worker.bindQueue({
      keys: {
        by: byTenant,
        weight: (key) => {
          calls.push(key);
          return 2;
        },
      },
    });
    q.add({ tenant: 7 });
    q.add({ tenant: 7 });
    expect(calls).toEqual(['7']);
    worker.start();
    await vi.runAllTimersAsync();
    expect(q.keyCount).toBe(0);
    q.add({ tenant: 7 });
    expect(calls).toEqual(['7', '7']);
  });

  it('asks keys.weight again of a rate-limited key whose last start has left its window, before the core next decides', async () => {
    const calls: string[] = [];
    const plan: Record<string, number> = { a: 1, b: 1 };
    const order: string[] = [];
    const worker = new Worker((job: Job<Task>) => void order.push(job.key as string));
    const q = worker.bindQueue({
      keys: { by: byTenant, rateLimit: { limit: 1000, interval: 100 }, weight: (key) => (calls.push(key), plan[key] as number) },
    });
    q.add({ tenant: 'a' });
    await vi.advanceTimersByTimeAsync(500); // a's start left its window at 100; nothing has asked the core since
    expect(calls).toEqual(['a']);
    plan.a = 5;
    for (let n = 0; n < 60; n++) {
      q.add({ tenant: 'a', n });
      q.add({ tenant: 'b', n });
    }
    expect(calls).toEqual(['a', 'a', 'b']);
    order.length = 0;
    await vi.advanceTimersByTimeAsync(0);
    const as = order.slice(0, 30).filter((key) => key === 'a').length;
    expect(Math.abs(as - 25)).toBeLessThan(3); // 30 starts at 5:1
    // The same through pauseKey, and through addAll.
    await vi.advanceTimersByTimeAsync(500);
    q.pauseKey('a');
    q.resumeKey('a');
    q.addAll([{ tenant: 'b' }]);
    expect(calls).toEqual(['a', 'a', 'b', 'a', 'b']);
  });

  it('a rate-limited key whose last start has left its window is new to the next add: it joins the end of the turn order', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant, rateLimit: { limit: 100, interval: 100 } } });
    q.add({ tenant: 'z', n: 0 }); // place 0
    q.add({ tenant: 'a', n: 0 }); // place 1
    q.pauseKey('z');
    worker.start();
    await flushMicrotasks();
    q.add({ tenant: 'b', n: 0 }); // place 2
    gate.finishOldest(); // a's last start, at 0, leaves its window at 100; b starts
    await flushMicrotasks();
    expect(keysOf(gate)).toEqual(['a', 'b']);
    await vi.advanceTimersByTimeAsync(500); // nothing asks the core meanwhile: b still runs
    q.add({ tenant: 'a', n: 1 }); // a new key: after b
    q.add({ tenant: 'b', n: 1 });
    q.resumeKey('z');
    await drain(gate);
    expect(keysOf(gate)).toEqual(['a', 'b', 'a', 'z', 'b']);
  });

  for (const via of ['pauseKey', 'stats'] as const) {
    it(`a key whose rate window opened in a ${via}() call, just before the worker's timer, still starts`, async () => {
      const starts: [unknown, number][] = [];
      const worker = new Worker((job: Job<Task>) => void starts.push([job.key, Date.now() - T0]), { concurrency: 4 });
      const q = worker.bindQueue({ keys: { by: byTenant, rateLimit: { limit: 1, interval: 1000 } } });
      // User code at 1000, just before qmux's own timer for that instant: it brings the keys to
      // now ('a' is ready again), then a cancel re-arms the worker's timer without a pass.
      setTimeout(() => {
        if (via === 'pauseKey') q.pauseKey('z');
        else worker.stats();
        c.cancel();
      }, 1000);
      q.pauseKey('c');
      const c = q.add({ tenant: 'c' });
      q.add({ tenant: 'a' });
      q.add({ tenant: 'a' });
      await vi.advanceTimersByTimeAsync(0);
      await vi.advanceTimersByTimeAsync(10_000);
      expect(starts).toEqual([
        ['a', 0],
        ['a', 1000],
      ]);
    });
  }

  it('a weight that is not a positive finite number makes the add throw naming keys.weight', () => {
    const worker = new Worker((_job: Job<Task>) => undefined, { autoRun: false });
    const weights: Record<string, unknown> = { zero: 0, neg: -1, nan: Number.NaN, inf: Infinity, str: '2' };
    const q = worker.bindQueue({ keys: { by: byTenant, weight: (key) => weights[key] as number } });
    for (const key of Object.keys(weights)) {
      expect(() => q.add({ tenant: key })).toThrow(/"keys.weight"/);
    }
    expect(() => q.addAll([{ tenant: 'zero' }])).toThrow(/"keys.weight"/);
    const thrower = worker.bindQueue({
      keys: {
        by: byTenant,
        weight: () => {
          throw new Error('no plan');
        },
      },
    });
    expect(() => thrower.add({ tenant: 'a' })).toThrow('no plan');
    expect(q.length + thrower.length).toBe(0);
    expect(q.keyCount + thrower.keyCount).toBe(0);
  });

  it('a key that had nothing waiting for a while gets no burst when it comes back', async () => {
    const order: string[] = [];
    const worker = new Worker(
      (job: Job<Task>) => {
        order.push(job.key as string);
        return new Promise<void>((resolve) => setTimeout(resolve, 10));
      },
      { autoRun: false },
    );
    const q = worker.bindQueue({ keys: { by: byTenant, weight: () => 1 } });
    for (let n = 0; n < 200; n++) q.add({ tenant: 'a', n });
    q.add({ tenant: 'b' });
    worker.start();
    await vi.advanceTimersByTimeAsync(1000); // b ran once long ago, then only a
    for (let n = 0; n < 20; n++) q.add({ tenant: 'b', n });
    const before = order.length;
    await vi.advanceTimersByTimeAsync(200);
    const after = order.slice(before, before + 20);
    const bs = after.filter((k) => k === 'b').length;
    expect(bs).toBeGreaterThanOrEqual(9);
    expect(bs).toBeLessThanOrEqual(11);
    await vi.runAllTimersAsync();
  });
});

describe('forgetting keys', () => {
  it('keyCount counts active keys and returns to 0 once they drain', async () => {
    const { gate, worker } = manual(4);
    const q = worker.bindQueue({ keys: { by: byTenant } });
    for (let n = 0; n < 1000; n++) q.add({ tenant: `t${n % 250}`, n });
    expect(q.keyCount).toBe(250);
    worker.start();
    await flushMicrotasks();
    expect(q.keyCount).toBe(250);
    await drain(gate);
    expect(q.keyCount).toBe(0);
    expect(q.keyStats('t1')).toEqual({ waiting: 0, due: 0, delayed: 0, running: 0, paused: false });
  });

  it('a key with a running job stays active until it settles', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.add({ tenant: 'a' });
    worker.start();
    await flushMicrotasks();
    expect(q.keyStats('a')).toEqual({ waiting: 0, due: 0, delayed: 0, running: 1, paused: false });
    expect(q.keyCount).toBe(1);
    gate.finishOldest();
    await flushMicrotasks();
    expect(q.keyCount).toBe(0);
  });

  it('a paused key is remembered until it is resumed', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.pauseKey('p');
    q.pauseKey(5);
    expect(q.keyCount).toBe(2);
    q.resumeKey('5');
    expect(q.keyCount).toBe(1);
    q.resumeKey('p');
    q.resumeKey('never-seen'); // nothing to do
    expect(q.keyCount).toBe(0);
  });

  it('pauseKey, resumeKey, keyStats and purge check the key', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    expect(() => q.pauseKey({} as never)).toThrow(TypeError);
    expect(() => q.resumeKey(Number.NaN)).toThrow(/"key"/);
    expect(() => q.keyStats(undefined as never)).toThrow(TypeError);
    expect(() => q.purge({ key: [] as never })).toThrow(TypeError);
    expect(() => q.purge({ kee: 'a' } as never)).toThrow(/unknown/);
    const plain: Queue<Task> = worker.bindQueue({ name: 'plain' }); // see above: K not known
    expect(() => plain.pauseKey('a')).toThrow(/keys/);
    expect(() => plain.purge({ key: 'a' })).toThrow(TypeError);
    expect(() => plain.keyStats('a')).toThrow('qmux: keyStats(key) is for queues bound with the "keys" option; source "plain" has none');
  });
});

describe('capacity, purge, cancel and close', () => {
  it('keys.capacity bounds each key’s waiting jobs with a QueueFullError naming the key', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ capacity: 5, keys: { by: byTenant, capacity: 2 } });
    q.add({ tenant: 'a' });
    q.add({ tenant: 'a' });
    let error: unknown;
    try {
      q.add({ tenant: 'a' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(QueueFullError);
    expect((error as Error).message).toMatch(/key "a"/);
    expect(q.tryAdd({ tenant: 'a' })).toBeUndefined();
    expect(() => q.addAll([{ tenant: 'b' }, { tenant: 'b' }, { tenant: 'b' }])).toThrow(/key "b"/);
    expect(q.keyCount).toBe(1);
    q.add({ tenant: 'b' });
    q.add({ tenant: 'c' });
    q.add({ tenant: 'd' });
    expect(() => q.add({ tenant: 'e' })).toThrow(QueueFullError); // the queue's own capacity counts every waiting job
    expect(q.length).toBe(5);
  });

  it('purge({ key }) removes one key’s waiting jobs; purge() removes them all, paused keys included', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    const a = [q.add({ tenant: 'a' }), q.add({ tenant: 'a' }, { delay: 50 })];
    const b = q.add({ tenant: 'b' });
    q.pauseKey('c');
    q.add({ tenant: 'c' });
    expect(q.purge({ key: 'a' })).toBe(2);
    expect(a.map((h) => h.status)).toEqual(['cancelled', 'cancelled']);
    expect(b.status).toBe('waiting');
    expect(q.keyCount).toBe(2);
    expect(q.purge({ key: 'zzz' })).toBe(0);
    expect(q.purge()).toBe(2);
    expect(q.length).toBe(0);
    expect(q.keyCount).toBe(1); // c is still paused
    worker.start();
    await vi.runAllTimersAsync();
    expect(gate.started).toHaveLength(0);
  });

  it('cancelling a waiting job takes it out of its key', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    const handle = q.add({ tenant: 'a', n: 1 });
    const delayed = q.add({ tenant: 'b', n: 2 }, { delay: 10 });
    q.add({ tenant: 'c', n: 3 });
    handle.cancel();
    delayed.cancel();
    expect(q.keyCount).toBe(1);
    worker.start();
    await vi.runAllTimersAsync();
    await drain(gate);
    expect(gate.started.map((s) => s.data.n)).toEqual([3]);
    expect(q.keyCount).toBe(0);
  });

  it('close rejects new adds while waiting jobs of every key still run', async () => {
    const { gate, worker } = manual();
    const q = worker.bindQueue({ keys: { by: byTenant } });
    q.add({ tenant: 'a' });
    q.add({ tenant: 'b' });
    q.close();
    expect(() => q.add({ tenant: 'a' })).toThrow(/closed/);
    worker.start();
    await drain(gate);
    expect(gate.started).toHaveLength(2);
  });

  it('stats() stays bounded and never names a key', () => {
    const { worker } = manual();
    const q = worker.bindQueue({ name: 'tenants', keys: { by: byTenant } });
    for (let n = 0; n < 500; n++) q.add({ tenant: `secret-${n}` }, n % 2 === 0 ? { delay: 10 } : undefined);
    q.pauseKey('secret-1');
    const stats = worker.stats();
    const text = JSON.stringify(stats);
    expect(text).not.toMatch(/secret/);
    expect(stats.sources.tenants?.waiting).toBe(500);
    expect(stats.sources.tenants?.delayed).toBe(250);
    expect(text.length).toBeLessThan(5000);
  });

  it('works with Strategy.RoundRobin across keyed and plain sources', async () => {
    const gate = new Gate<Task>();
    const worker = new Worker(gate.handler, { autoRun: false, strategy: Strategy.RoundRobin });
    const keyed = worker.bindQueue({ keys: { by: byTenant, concurrency: 1 } });
    const plain = worker.bindQueue();
    for (let n = 0; n < 3; n++) keyed.add({ tenant: 'a', n });
    for (let n = 0; n < 3; n++) plain.add({ tenant: 'p', n });
    worker.start();
    await drain(gate);
    expect(gate.started).toHaveLength(6);
  });
});
