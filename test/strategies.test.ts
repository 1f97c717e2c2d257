import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvariantError, Strategy, Topic, Worker, setDefaultStrategy, type Job, type Picker, type SourceView } from '../src/index.js';
import { Gate, flushMicrotasks } from './helpers.js';

/** A plain copy of a view: views are live, so a log must copy what it saw. */
interface Seen {
  name: string;
  index: number;
  priority: number | undefined;
  weight: number;
  length: number;
  running: number;
  eligible: boolean;
}

function seen(view: SourceView): Seen {
  const { name, index, priority, weight, length, running, eligible } = view;
  return { name, index, priority, weight, length, running, eligible };
}

/** Wraps a strategy so every call to `pick` records the list it was given. */
function recording(inner: Strategy, log: Seen[][]): Strategy {
  return {
    name: `Recording(${inner.name})`,
    create(): Picker {
      const picker = inner.create();
      return {
        pick(list) {
          log.push(list.map(seen));
          return picker.pick(list);
        },
      };
    },
  };
}

/** Source names of the jobs a synchronous handler ran, in order. */
function sourceRecorder(): { taken: string[]; handler: (job: Job<unknown>) => void } {
  const taken: string[] = [];
  return { taken, handler: (job) => void taken.push(job.source) };
}

afterEach(() => {
  setDefaultStrategy(Strategy.Priority);
  vi.useRealTimers();
});

describe('Strategy.Weighted', () => {
  it('takes A B A A B A C A B A and repeats for weights 6:3:1 with every source busy', async () => {
    const { taken, handler } = sourceRecorder();
    const worker = new Worker(handler, { strategy: Strategy.Weighted, autoRun: false });
    const a = worker.bindQueue({ name: 'A', weight: 6 });
    const b = worker.bindQueue({ name: 'B', weight: 3 });
    const c = worker.bindQueue({ name: 'C', weight: 1 });
    for (let i = 0; i < 40; i++) {
      a.add(i);
      b.add(i);
      c.add(i);
    }
    worker.start();
    await worker.waitUntilIdle();
    const cycle = 'A B A A B A C A B A'.split(' ');
    expect(taken.slice(0, 30)).toEqual([...cycle, ...cycle, ...cycle]);
  });

  it('gives a source that was empty for 100 picks no burst when it comes back', async () => {
    const taken: string[] = [];
    let returnedAt = -1;
    const worker = new Worker(
      (job: Job<number>) => {
        taken.push(job.source);
        if (taken.length === 100) {
          returnedAt = taken.length; // C is eligible from the next pick on
          for (let i = 0; i < 40; i++) c.add(i);
        }
      },
      { strategy: Strategy.Weighted, autoRun: false },
    );
    const a = worker.bindQueue({ name: 'A', weight: 6 });
    const b = worker.bindQueue({ name: 'B', weight: 3 });
    const c = worker.bindQueue({ name: 'C', weight: 1 });
    for (let i = 0; i < 300; i++) {
      a.add(i);
      b.add(i);
    }
    worker.start();
    await worker.waitUntilIdle();

    expect(returnedAt).toBe(100);
    expect(taken.slice(0, 100)).not.toContain('C');
    // Over every window of 10 picks after its return, C gets its weight share (1 of 10): never a run.
    const after = taken.slice(returnedAt, returnedAt + 60);
    for (let start = 0; start + 10 <= after.length; start++) {
      const window = after.slice(start, start + 10);
      expect(
        window.filter((s) => s === 'C'),
        `window at pick ${returnedAt + start}: ${window.join('')}`,
      ).toHaveLength(1);
    }
    // And the others keep their 6:3 ratio meanwhile.
    const first10 = after.slice(0, 10);
    expect(first10.filter((s) => s === 'A')).toHaveLength(6);
    expect(first10.filter((s) => s === 'B')).toHaveLength(3);
  });
});

describe('Strategy.RoundRobin', () => {
  it('skips an empty source without spending its turn: it is served next once it has work', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: Strategy.RoundRobin, autoRun: false });
    const a = worker.bindQueue({ name: 'A' });
    const b = worker.bindQueue({ name: 'B' });
    const c = worker.bindQueue({ name: 'C' });
    for (let i = 0; i < 3; i++) {
      a.add(`a${i}`);
      c.add(`c${i}`);
    }
    worker.start();
    await flushMicrotasks();
    gate.finishOldest(); // a0
    await flushMicrotasks();
    gate.finishOldest(); // c0
    await flushMicrotasks();
    // a1 runs now; B gets work. B comes right after A in turn.
    b.add('b0');
    b.add('b1');
    const idle = worker.waitUntilIdle();
    while (gate.open.length > 0) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    await idle;
    expect(gate.order).toEqual(['a0', 'c0', 'a1', 'b0', 'c1', 'a2', 'b1', 'c2']);
  });

  it('skips a source held at its own concurrency without spending its turn', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: Strategy.RoundRobin, concurrency: 2, autoRun: false });
    const a = worker.bindQueue({ name: 'A' });
    const b = worker.bindQueue({ name: 'B', concurrency: 1 });
    const c = worker.bindQueue({ name: 'C' });
    for (let i = 0; i < 4; i++) {
      a.add(`a${i}`);
      b.add(`b${i}`);
      c.add(`c${i}`);
    }
    worker.start();
    await flushMicrotasks();
    expect(gate.order).toEqual(['a0', 'b0']);
    gate.started[0]?.finish(); // a0 done: after B comes C
    await flushMicrotasks();
    expect(gate.order).toEqual(['a0', 'b0', 'c0']);
    gate.started[2]?.finish(); // c0 done: B is capped (b0 runs), so A
    await flushMicrotasks();
    expect(gate.order).toEqual(['a0', 'b0', 'c0', 'a1']);
    gate.started[1]?.finish(); // b0 done: after A comes B, which is eligible again
    await flushMicrotasks();
    expect(gate.order).toEqual(['a0', 'b0', 'c0', 'a1', 'b1']);
    const stopped = worker.stop();
    gate.finishAll();
    await stopped;
  });
  it('gives a source bound while running its turn at its place in the list', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: Strategy.RoundRobin });
    const a = worker.bindQueue({ name: 'A', priority: 1 });
    const c = worker.bindQueue({ name: 'C', priority: 3 });
    for (let i = 0; i < 3; i++) {
      a.add(`a${i}`);
      c.add(`c${i}`);
    }
    await flushMicrotasks();
    expect(gate.order).toEqual(['a0']);
    const b = worker.bindQueue({ name: 'B', priority: 2 }); // between A and C: next in turn after A
    for (let i = 0; i < 3; i++) b.add(`b${i}`);
    while (gate.open.length > 0) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    await worker.waitUntilIdle();
    expect(gate.order).toEqual(['a0', 'b0', 'c0', 'a1', 'b1', 'c1', 'a2', 'b2', 'c2']);
  });

  it('keeps the turn order when the last source served leaves the list (a drained subscription)', async () => {
    const topic = new Topic<string>();
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: Strategy.RoundRobin, autoRun: false });
    const first = worker.bindQueue({ name: 'first' });
    const sub = worker.subscribe(topic, { name: 'sub' });
    const last = worker.bindQueue({ name: 'last' });
    for (let i = 0; i < 2; i++) {
      first.add(`f${i}`);
      last.add(`l${i}`);
    }
    topic.publish('s0');
    sub.unsubscribe(); // s0 still runs, then the subscription leaves the list
    worker.start();
    while (gate.started.length < 5) {
      await flushMicrotasks();
      gate.finishOldest();
    }
    await worker.waitUntilIdle();
    // After 'sub' comes 'last' in turn, whether or not 'sub' is still in the list.
    expect(gate.order).toEqual(['f0', 's0', 'l0', 'f1', 'l1']);
  });

  it('remembers the source served while it was bound alone: a source bound later gets the next turn', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: Strategy.RoundRobin });
    const a = worker.bindQueue({ name: 'A' });
    for (let i = 1; i <= 3; i++) a.add(`a${i}`);
    await flushMicrotasks();
    expect(gate.order).toEqual(['a1']); // one source: the strategy is not asked
    const b = worker.bindQueue({ name: 'B' });
    for (let i = 1; i <= 2; i++) b.add(`b${i}`);
    while (gate.open.length > 0) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    await worker.waitUntilIdle();
    // A was served last, so B's turn comes first: the same order as with B bound from the start.
    expect(gate.order).toEqual(['a1', 'b1', 'a2', 'b2', 'a3']);
  });

  it('after the source served while bound alone leaves the list, the turn goes to the one ranked after its place', async () => {
    const topic = new Topic<string>();
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: Strategy.RoundRobin });
    const sub = worker.subscribe(topic, { name: 'S', priority: 3 });
    topic.publish('s0');
    await flushMicrotasks();
    expect(gate.order).toEqual(['s0']); // S alone: the strategy is not asked
    sub.unsubscribe();
    gate.finishOldest();
    await flushMicrotasks(); // S has drained and left the list
    const a = worker.bindQueue({ name: 'A', priority: 1 });
    const c = worker.bindQueue({ name: 'C', priority: 5 });
    for (let i = 0; i < 2; i++) {
      a.add(`a${i}`);
      c.add(`c${i}`);
    }
    while (gate.order.length < 5 || gate.open.length > 0) {
      await flushMicrotasks();
      gate.finishOldest();
    }
    await worker.waitUntilIdle();
    // S (priority 3) was served last: C, ranked after its place, has the next turn, then A.
    expect(gate.order).toEqual(['s0', 'c0', 'a0', 'c1', 'a1']);
  });

  it('a custom picker hears of starts made without asking it, through its optional served()', async () => {
    const told: string[] = [];
    const picks: string[] = [];
    const strategy = {
      name: 'Recording',
      create: (): Picker => ({
        served: (view) => void told.push(view.name),
        pick: (list) => {
          const view = list.find((s) => s.eligible) as SourceView;
          picks.push(view.name);
          return view;
        },
      }),
    };
    const worker = new Worker((job: Job<string>) => job.data, { strategy, autoRun: false });
    const a = worker.bindQueue({ name: 'A' });
    a.add('a1');
    a.add('a2');
    worker.start();
    await worker.waitUntilIdle();
    expect(told).toEqual([]); // nothing to tell until the picker is asked again
    worker.bindQueue({ name: 'B' }).add('b1');
    a.add('a3');
    await worker.waitUntilIdle();
    expect(told).toEqual(['A']);
    expect(picks).toEqual(['A', 'B']);
  });

  it('after the last source served leaves, the turn goes to the one ranked after its place, not to a newcomer bound before it', async () => {
    const topic = new Topic<string>();
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: Strategy.RoundRobin, autoRun: false });
    const a = worker.bindQueue({ name: 'A', priority: 1 });
    const sub = worker.subscribe(topic, { name: 'S', priority: 3 });
    const c = worker.bindQueue({ name: 'C', priority: 5 });
    for (let i = 0; i < 2; i++) {
      a.add(`a${i}`);
      c.add(`c${i}`);
    }
    topic.publish('s0');
    sub.unsubscribe(); // S leaves the list once s0 has run
    worker.start();
    await flushMicrotasks();
    gate.finishOldest(); // a0
    await flushMicrotasks();
    expect(gate.order).toEqual(['a0', 's0']);
    // While s0 runs, B is bound between A and S. When s0 ends S leaves, so the list is A B C and
    // S's old index now holds B; but B ranks before S's place, so C has the next turn.
    const b = worker.bindQueue({ name: 'B', priority: 2 });
    b.add('b0');
    b.add('b1');
    while (gate.open.length > 0) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    await worker.waitUntilIdle();
    expect(gate.order).toEqual(['a0', 's0', 'c0', 'a1', 'b0', 'c1', 'b1']);
  });

  it('a source served while bound alone that has left the list since passes the turn to the one ranked after its place', async () => {
    const topic = new Topic<string>();
    const order: string[] = [];
    const worker = new Worker((job: Job<string>) => void order.push(job.data), { strategy: Strategy.RoundRobin, concurrency: 1 });
    const sub = worker.subscribe(topic, { name: 'S', priority: 3 });
    topic.publish('s0'); // runs without asking the picker: S is alone
    sub.unsubscribe();
    await worker.waitUntilIdle(); // S has left the list
    const a = worker.bindQueue({ name: 'A', priority: 1 });
    const c = worker.bindQueue({ name: 'C', priority: 5 });
    for (let i = 0; i < 2; i++) {
      a.add(`a${i}`);
      c.add(`c${i}`);
    }
    await worker.waitUntilIdle();
    // The picker hears that S was served last: C, ranked after S's place, has the next turn.
    expect(order).toEqual(['s0', 'c0', 'a0', 'c1', 'a1']);
  });
});

describe('Strategy.MaxLen and Strategy.MinLen', () => {
  it('MaxLen breaks a tie in favour of the first source in the list, not the first bound', async () => {
    const { taken, handler } = sourceRecorder();
    const worker = new Worker(handler, { strategy: Strategy.MaxLen, autoRun: false });
    const late = worker.bindQueue({ name: 'unranked' });
    const early = worker.bindQueue({ name: 'ranked', priority: 5 });
    late.add(1);
    late.add(2);
    early.add(1);
    early.add(2);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(['ranked', 'unranked', 'ranked', 'unranked']);
  });

  it('MinLen breaks a tie in favour of the first source in the list, and ignores empty sources', async () => {
    const { taken, handler } = sourceRecorder();
    const worker = new Worker(handler, { strategy: Strategy.MinLen, autoRun: false });
    const empty = worker.bindQueue({ name: 'empty', priority: 0 });
    const late = worker.bindQueue({ name: 'unranked' });
    const early = worker.bindQueue({ name: 'ranked', priority: 5 });
    late.add(1);
    early.add(1);
    expect(empty.length).toBe(0);
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(['ranked', 'unranked']);
  });

  it('MaxLen reads the lengths as they are at each start, counting due jobs only', async () => {
    vi.useFakeTimers();
    const { taken, handler } = sourceRecorder();
    const worker = new Worker(handler, { strategy: Strategy.MaxLen, autoRun: false });
    const a = worker.bindQueue({ name: 'A' });
    const b = worker.bindQueue({ name: 'B' });
    a.add(1);
    a.add(2);
    b.add(0);
    for (let i = 1; i <= 5; i++) b.add(i, { delay: 1000 }); // B is longer, but only one of its jobs is due
    worker.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(taken).toEqual(['A', 'A', 'B']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(taken).toEqual(['A', 'A', 'B', 'B', 'B', 'B', 'B', 'B']);
  });
});

describe('Strategy.Priority and the list', () => {
  it('binding a source while the worker runs inserts it at its place in the list', async () => {
    const log: Seen[][] = [];
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler, { strategy: recording(Strategy.Priority, log) });
    const low = worker.bindQueue({ name: 'p3', priority: 3 });
    worker.bindQueue({ name: 'p1', priority: 1 });
    worker.bindQueue({ name: 'unranked' });
    low.add('low-0');
    low.add('low-1');
    low.add('low-2');
    await flushMicrotasks();
    expect(gate.order).toEqual(['low-0']);

    // Bound while running: a priority 2 goes between p1 and p3, an equal number after the
    // existing one, an unranked one at the end, and a priority 0 first.
    worker.bindQueue({ name: 'p2', priority: 2 });
    worker.bindQueue({ name: 'p3-second', priority: 3 });
    worker.bindQueue({ name: 'unranked-second' });
    const urgent = worker.bindQueue({ name: 'p0', priority: 0 });
    urgent.add('urgent');
    gate.finishOldest();
    await flushMicrotasks();

    expect(gate.order).toEqual(['low-0', 'urgent']);
    const last = log.at(-1) as Seen[];
    expect(last.map((v) => v.name)).toEqual(['p0', 'p1', 'p2', 'p3', 'p3-second', 'unranked', 'unranked-second']);
    expect(last.map((v) => v.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    gate.finishAll();
    await flushMicrotasks();
    gate.finishAll();
    await flushMicrotasks();
    gate.finishAll();
    await worker.waitUntilIdle();
    expect(gate.order).toEqual(['low-0', 'urgent', 'low-1', 'low-2']);
  });

  it('a priority queue as a source ranks by its bind priority, not by its jobs’ priority numbers', async () => {
    const { taken, handler } = sourceRecorder();
    const worker = new Worker(handler, { autoRun: false });
    const pq = worker.bindPriorityQueue({ name: 'pq', priority: 2 });
    const q = worker.bindQueue({ name: 'q', priority: 1 });
    pq.add('x', -100);
    q.add('y');
    worker.start();
    await worker.waitUntilIdle();
    expect(taken).toEqual(['q', 'pq']);
  });

  it('starves a lower-ranked source while a higher one has work (strict priority)', async () => {
    const gate = new Gate<string>();
    const worker = new Worker(gate.handler);
    const high = worker.bindQueue({ name: 'high', priority: 1 });
    const low = worker.bindQueue({ name: 'low', priority: 2 });
    low.add('l0');
    high.add('h0');
    await flushMicrotasks();
    high.add('h1');
    low.add('l1');
    high.add('h2');
    for (let i = 0; i < 5; i++) {
      gate.finishOldest();
      await flushMicrotasks();
    }
    await worker.waitUntilIdle();
    expect(gate.order).toEqual(['h0', 'h1', 'h2', 'l0', 'l1']);
  });
});

describe('custom strategies', () => {
  it('a picker whose served is null counts as having none; one that is not a function throws at construction', async () => {
    const withServed = (served: unknown): Strategy => ({
      name: 'Served',
      create: () => ({ pick: (list: readonly SourceView[]) => list.find((view) => view.eligible) as SourceView, served }) as never,
    });
    const worker = new Worker((job: Job<number>) => job.data, { strategy: withServed(null) });
    const [a, b] = [worker.bindQueue(), worker.bindQueue()];
    expect(await Promise.all([a.add(1).result(), b.add(2).result()])).toEqual([1, 2]);
    expect(() => new Worker(() => undefined, { strategy: withServed('later') })).toThrow(
      `qmux: strategy "Served": the picker's served must be a method served(view) or left out (null counts as left out), got "later"`,
    );
  });

  it('receive SourceViews with name, index, priority, weight, due length, running and eligible', async () => {
    vi.useFakeTimers();
    const log: Seen[][] = [];
    const gate = new Gate<string>();
    const first: Strategy = {
      name: 'FirstEligible',
      create: () => ({
        pick(list) {
          log.push(list.map(seen));
          return list.find((view) => view.eligible) as SourceView;
        },
      }),
    };
    const worker = new Worker(gate.handler, { strategy: first, concurrency: 4, autoRun: false });
    const a = worker.bindQueue({ name: 'A', priority: 1, weight: 2 });
    const b = worker.bindQueue({ name: 'B', weight: 3, concurrency: 1 });
    worker.bindPriorityQueue({ name: 'C', priority: 7 });
    const d = worker.bindQueue({ name: 'D' });
    a.add('a-due');
    a.add('a-delayed', { delay: 5000 });
    b.add('b0');
    b.add('b1');
    d.add('d0');
    expect(a.length).toBe(2);
    worker.start();
    await vi.advanceTimersByTimeAsync(0);

    expect(gate.order).toEqual(['a-due', 'b0', 'd0']);
    expect(log).toHaveLength(3); // the fourth slot stays free: nothing eligible, so no call
    expect(log[0]).toEqual([
      { name: 'A', index: 0, priority: 1, weight: 2, length: 1, running: 0, eligible: true },
      { name: 'C', index: 1, priority: 7, weight: 1, length: 0, running: 0, eligible: false },
      { name: 'B', index: 2, priority: undefined, weight: 3, length: 2, running: 0, eligible: true },
      { name: 'D', index: 3, priority: undefined, weight: 1, length: 1, running: 0, eligible: true },
    ]);
    // B holds a due job but is at its own concurrency: not eligible.
    expect(log[2]?.find((v) => v.name === 'B')).toEqual({
      name: 'B',
      index: 2,
      priority: undefined,
      weight: 3,
      length: 1,
      running: 1,
      eligible: false,
    });
    expect(log[2]?.find((v) => v.name === 'A')).toMatchObject({ length: 0, running: 1, eligible: false });
    const stopped = worker.stop();
    gate.finishAll();
    await stopped;
  });

  it('is called for every start with two or more sources, never when none is eligible, never with one source', async () => {
    let calls = 0;
    const counting: Strategy = {
      name: 'Counting',
      create: () => {
        const inner = Strategy.Priority.create();
        return {
          pick(list) {
            calls++;
            return inner.pick(list);
          },
        };
      },
    };
    const single = new Worker(() => undefined, { strategy: counting });
    const only = single.bindQueue();
    for (let i = 0; i < 5; i++) only.add(i);
    await single.waitUntilIdle();
    expect(calls).toBe(0);

    const two = new Worker(() => undefined, { strategy: counting });
    const q1 = two.bindQueue();
    const q2 = two.bindQueue();
    for (let i = 0; i < 4; i++) q1.add(i);
    for (let i = 0; i < 3; i++) q2.add(i);
    await two.waitUntilIdle();
    expect(calls).toBe(7);
  });

  it('sees every job added in the same synchronous run before the first starts (autoRun: true)', async () => {
    const log: Seen[][] = [];
    const worker = new Worker(() => undefined, { strategy: recording(Strategy.MaxLen, log) });
    const a = worker.bindQueue({ name: 'A' });
    const b = worker.bindQueue({ name: 'B' });
    const c = worker.bindQueue({ name: 'C' });
    a.add(1);
    b.add(1);
    b.add(2);
    b.add(3);
    c.add(1);
    c.add(2);
    await worker.waitUntilIdle();
    expect(log[0]?.map((v) => v.length)).toEqual([1, 3, 2]);
    expect(log).toHaveLength(6);
  });

  it('sees every job added in the same synchronous run as start()', async () => {
    const log: Seen[][] = [];
    const worker = new Worker(() => undefined, { strategy: recording(Strategy.MinLen, log), autoRun: false, concurrency: 3 });
    const a = worker.bindQueue({ name: 'A' });
    const b = worker.bindQueue({ name: 'B' });
    a.add(1);
    worker.start();
    a.add(2);
    b.add(1);
    await worker.waitUntilIdle();
    expect(log[0]?.map((v) => v.length)).toEqual([2, 1]);
  });

  it('a strategy that returns an ineligible source halts the worker and loses no job', async () => {
    const broken: Strategy = {
      name: 'PicksEmpty',
      create: () => ({ pick: (list) => list.find((view) => !view.eligible) ?? (list[0] as SourceView) }),
    };
    const halted: InvariantError[] = [];
    const worker = new Worker(() => undefined, { strategy: broken });
    worker.on('halted', (error) => halted.push(error));
    worker.bindQueue({ name: 'empty' });
    const full = worker.bindQueue({ name: 'full' });
    full.add(1);
    full.add(2);
    await expect(worker.waitUntilIdle()).rejects.toBeInstanceOf(InvariantError);
    expect(worker.status).toBe('halted');
    expect(halted).toHaveLength(1);
    expect(halted[0]?.message).toMatch(/eligible/);
    expect(worker.numPending).toBe(2);
    expect(full.length).toBe(2);
  });

  it('gets a list it cannot reorder: a pick that sorts it in place throws, halts the worker, and the list order stays', async () => {
    const sorting: Strategy = {
      name: 'SortsInPlace',
      create: () => ({
        pick: (list) => {
          (list as SourceView[]).sort((a, b) => b.length - a.length);
          return list[0] as SourceView;
        },
      }),
    };
    const worker = new Worker(() => undefined, { strategy: sorting, autoRun: false });
    const a = worker.bindQueue({ name: 'a' });
    const b = worker.bindQueue({ name: 'b' });
    a.add(1);
    for (let i = 0; i < 3; i++) b.add(i);
    worker.start();
    await expect(worker.waitUntilIdle()).rejects.toBeInstanceOf(InvariantError);
    expect(worker.status).toBe('halted');
    expect(Object.keys(worker.stats().sources)).toEqual(['a', 'b']);
    expect(worker.numPending).toBe(4);
  });

  it('keeps one picker per worker (state is not shared between workers)', async () => {
    let created = 0;
    const counting: Strategy = {
      name: 'Counting',
      create: () => {
        created++;
        return Strategy.RoundRobin.create();
      },
    };
    new Worker(() => undefined, { strategy: counting });
    new Worker(() => undefined, { strategy: counting });
    expect(created).toBe(2);
  });
});

describe('setDefaultStrategy', () => {
  it('changes the strategy of workers created after the call only', async () => {
    const { taken: beforeTaken, handler: beforeHandler } = sourceRecorder();
    const { taken: afterTaken, handler: afterHandler } = sourceRecorder();
    const before = new Worker(beforeHandler, { autoRun: false });
    setDefaultStrategy(Strategy.RoundRobin);
    const after = new Worker(afterHandler, { autoRun: false });
    expect(before.strategy).toBe(Strategy.Priority);
    expect(after.strategy).toBe(Strategy.RoundRobin);

    for (const worker of [before, after]) {
      const x = worker.bindQueue({ name: 'x' });
      const y = worker.bindQueue({ name: 'y' });
      x.add(1);
      x.add(2);
      y.add(1);
      y.add(2);
      worker.start();
      await worker.waitUntilIdle();
    }
    expect(beforeTaken).toEqual(['x', 'x', 'y', 'y']);
    expect(afterTaken).toEqual(['x', 'y', 'x', 'y']);
  });

  it('does not override an explicit strategy option', () => {
    setDefaultStrategy(Strategy.MinLen);
    const worker = new Worker(() => undefined, { strategy: Strategy.MaxLen });
    expect(worker.strategy).toBe(Strategy.MaxLen);
    expect(new Worker(() => undefined).strategy).toBe(Strategy.MinLen);
  });
});

describe('lengths a strategy reads while delayed jobs come due', () => {
  it('count the due jobs still held with the delayed ones, as if they had all moved', async () => {
    vi.useFakeTimers({ now: Date.UTC(2030, 0, 1) });
    const log: Seen[][] = [];
    const { taken, handler } = sourceRecorder();
    const worker = new Worker(handler, { concurrency: 1, strategy: recording(Strategy.MaxLen, log), autoRun: false });
    const a = worker.bindQueue({ name: 'a' });
    const b = worker.bindQueue({ name: 'b' });
    const runAt = Date.now() + 1000;
    for (let i = 0; i < 300; i++) a.add(i, { runAt }); // one runAt: a sorted run
    for (let i = 0; i < 5; i++) b.add(i);
    worker.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(taken).toEqual(['b', 'b', 'b', 'b', 'b']);
    log.length = 0;
    await vi.advanceTimersByTimeAsync(1000);
    // 300 due in a (all but the earliest still wait with the delayed jobs when the first pick reads it).
    expect(log[0]?.map((view) => [view.name, view.length])).toEqual([
      ['a', 300],
      ['b', 0],
    ]);
    expect(taken.slice(5)).toEqual(Array(300).fill('a'));
    expect(log.map((list) => list[0]?.length)).toEqual(Array.from({ length: 300 }, (_, i) => 300 - i));
    await worker.waitUntilIdle();
  });
});
