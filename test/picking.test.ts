/**
 * Picking that scales (issue 13): the dispatcher keeps the set of eligible sources as they change,
 * and the built-in strategies pick from it through an internal fast interface. These tests hold
 * the set and the fast pickers to what a from-scratch walk of the views gives.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EligibleSet } from '../src/core/eligible-set.js';
import { Strategy, Topic, Worker, type Job, type Picker, type SourceView } from '../src/index.js';
import type { Lane } from '../src/core/lane.js';
import { BOUND, ENTERED, type FastPicker, fastPickerOf, LEFT, PICK_ELIGIBLE } from '../src/core/fast-picker.js';
import type { Strategy as StrategyType } from '../src/api/strategy.js';
import { Rng } from './sim/prng.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('EligibleSet', () => {
  for (const capacity of [1, 31, 32, 33, 1000, 1025, 40_000]) {
    it(`finds the first position and the next one at or after any position, over ${capacity} positions`, () => {
      const rng = new Rng(capacity);
      const set = new EligibleSet();
      set.reset(capacity);
      const model = new Set<number>();
      const nextInModel = (from: number): number => {
        for (let i = from; i < capacity; i++) if (model.has(i)) return i;
        return -1;
      };
      for (let step = 0; step < 3000; step++) {
        const at = rng.int(0, capacity - 1);
        if (model.has(at)) {
          model.delete(at);
          set.delete(at);
        } else {
          model.add(at);
          set.add(at);
        }
        const from = rng.int(0, capacity);
        expect(set.nextFrom(from)).toBe(nextInModel(from));
        expect(set.first()).toBe(nextInModel(0));
        expect(set.size).toBe(model.size);
        expect(set.has(at)).toBe(model.has(at));
      }
      // Every position, walked in order.
      const walked: number[] = [];
      for (let at = set.first(); at >= 0; at = set.nextFrom(at + 1)) walked.push(at);
      expect(walked).toEqual([...model].sort((a, b) => a - b));
    });
  }

  it('keeps every position as it grows (from one level to three), and finds them all after', () => {
    const rng = new Rng(7);
    const set = new EligibleSet();
    let capacity = 20;
    set.reset(capacity);
    const model = new Set<number>();
    const nextInModel = (from: number): number => {
      for (let i = from; i < capacity; i++) if (model.has(i)) return i;
      return -1;
    };
    while (capacity < 70_000) {
      for (let step = 0; step < 400; step++) {
        const at = rng.chance(0.7) ? rng.int(Math.floor(capacity / 2), capacity - 1) : rng.int(0, capacity - 1);
        if (model.has(at)) {
          model.delete(at);
          set.delete(at);
        } else {
          model.add(at);
          set.add(at);
        }
      }
      capacity = capacity * 3 + 1;
      set.grow(capacity);
      expect(set.capacity).toBe(capacity);
      expect(set.size).toBe(model.size);
      for (let probe = 0; probe < 200; probe++) {
        const from = rng.int(0, capacity);
        expect(set.nextFrom(from)).toBe(nextInModel(from));
      }
      // The new room takes positions too.
      set.add(capacity - 1);
      model.add(capacity - 1);
      expect(set.nextFrom(capacity - 1)).toBe(capacity - 1);
    }
    const walked: number[] = [];
    for (let at = set.first(); at >= 0; at = set.nextFrom(at + 1)) walked.push(at);
    expect(walked).toEqual([...model].sort((a, b) => a - b));
  });
});

/** The same strategy without its fast interface: the dispatcher then walks the public `pick(list)`. */
function throughViews(inner: StrategyType): StrategyType {
  return {
    name: `${inner.name} (views)`,
    create(): Picker {
      const picker = inner.create();
      return {
        pick: (list) => picker.pick(list),
        served: (view) => picker.served?.(view),
      };
    },
  };
}

/**
 * 70 sources (two summary words of the set, with room to spare) with priorities, weights, caps
 * and rate limits, a topic's subscriptions that leave midway, delayed jobs and handlers that take
 * seeded virtual times: the order in which sources were served.
 */
async function serve(strategy: StrategyType, seed: number): Promise<string[]> {
  vi.useFakeTimers();
  const rng = new Rng(seed);
  const served: string[] = [];
  const worker = new Worker(
    async (job: Job<number>) => {
      served.push(job.source);
      await new Promise((resolve) => setTimeout(resolve, job.data));
    },
    { strategy, concurrency: 5 },
  );
  const queues = [];
  for (let i = 0; i < 64; i++) {
    queues.push(
      worker.bindQueue({
        name: `q${i}`,
        weight: rng.int(1, 5),
        ...(rng.chance(0.3) ? { priority: rng.int(0, 3) } : {}),
        ...(rng.chance(0.3) ? { concurrency: rng.int(1, 2) } : {}),
        ...(rng.chance(0.15) ? { rateLimit: { limit: rng.int(1, 3), interval: rng.int(5, 40) } } : {}),
      }),
    );
  }
  // Priority and keyed queues: what a length-reading strategy reads there (held due jobs, paused keys) differs from a FIFO's.
  const ranked = [0, 1, 2].map((i) => worker.bindPriorityQueue({ name: `p${i}`, weight: rng.int(1, 5) }));
  const keyed = worker.bindQueue({ name: 'k', keys: { by: (data: number) => data % 4, concurrency: 1 } });
  const topic = new Topic<number>();
  const subscriptions = [];
  for (let i = 0; i < 6; i++) subscriptions.push(worker.subscribe(topic, { name: `s${i}`, weight: rng.int(1, 5) }));
  for (let round = 0; round < 30; round++) {
    for (let j = 0; j < 25; j++) {
      const queue = queues[rng.int(0, queues.length - 1)];
      const delay = rng.chance(0.2) ? { delay: rng.int(1, 30) } : undefined;
      queue?.add(rng.int(0, 12), delay);
    }
    for (let j = 0; j < 4; j++) {
      const delay = rng.chance(0.3) ? rng.int(1, 30) : 0;
      ranked[rng.int(0, ranked.length - 1)]?.add(rng.int(0, 12), rng.int(0, 9), delay > 0 ? { delay } : undefined);
      keyed.add(rng.int(0, 12), rng.chance(0.3) ? { delay: rng.int(1, 30) } : undefined);
    }
    if (round === 5) keyed.pauseKey(1);
    if (round === 20) keyed.resumeKey(1);
    if (rng.chance(0.5)) topic.publish(rng.int(0, 12));
    if (round === 15) for (const subscription of subscriptions.slice(0, 3)) subscription.unsubscribe();
    await vi.advanceTimersByTimeAsync(rng.int(0, 20));
  }
  await vi.advanceTimersByTimeAsync(10_000);
  await worker.waitUntilIdle();
  vi.useRealTimers();
  return served;
}

describe('the built-in strategies over the kept eligible set', () => {
  for (const name of ['Priority', 'RoundRobin', 'Weighted', 'MaxLen', 'MinLen'] as const) {
    it(`Strategy.${name} serves exactly what its public pick(list) serves, with 70 sources that change`, async () => {
      for (const seed of [1, 2, 3]) {
        const fast = await serve(Strategy[name], seed);
        const walked = await serve(throughViews(Strategy[name]), seed);
        expect(fast.length).toBeGreaterThan(700);
        expect(fast).toEqual(walked);
      }
    });
  }

  it('serves different orders under different strategies (the comparison above can tell them apart)', async () => {
    const priority = await serve(Strategy.Priority, 1);
    const roundRobin = await serve(Strategy.RoundRobin, 1);
    const weighted = await serve(Strategy.Weighted, 1);
    const maxLen = await serve(Strategy.MaxLen, 1);
    const minLen = await serve(Strategy.MinLen, 1);
    expect(roundRobin).not.toEqual(priority);
    expect(weighted).not.toEqual(roundRobin);
    expect(maxLen).not.toEqual(minLen);
    expect(maxLen).not.toEqual(roundRobin);
    expect(minLen).not.toEqual(priority);
  });
});

/** A stand-in for a bound source's lane: the fields the fast path reads. */
interface FakeSource {
  ordinal: number;
  index: number;
  bindOrder: number;
  priority: number | undefined;
  weight: number;
  length: number;
  eligible: boolean;
  readonly dueLength: number;
}

/** The SPEC 4 table, naively: what each strategy picks from `list`, given its own state. */
function referencePicker(name: string): (list: readonly FakeSource[]) => number {
  let last = -1;
  const credits: number[] = [];
  return (list) => {
    const eligible = list.filter((s) => s.eligible);
    if (name === 'Priority') return (eligible[0] as FakeSource).index;
    if (name === 'RoundRobin') {
      const next = eligible.find((s) => s.index > last) ?? (eligible[0] as FakeSource);
      last = next.index;
      return next.index;
    }
    if (name === 'MaxLen' || name === 'MinLen') {
      const sign = name === 'MaxLen' ? 1 : -1;
      return eligible.reduce((best, s) => (sign * s.length > sign * best.length ? s : best)).index;
    }
    let total = 0;
    let best: FakeSource | undefined;
    for (const s of eligible) {
      credits[s.index] = (credits[s.index] ?? 0) + s.weight;
      total += s.weight;
      if (best === undefined || (credits[s.index] as number) > (credits[best.index] as number)) best = s;
    }
    credits[(best as FakeSource).index] = (credits[(best as FakeSource).index] as number) - total;
    return (best as FakeSource).index;
  };
}

describe('each built-in strategy is written once', () => {
  for (const name of ['Priority', 'RoundRobin', 'Weighted', 'MaxLen', 'MinLen'] as const) {
    it(`Strategy.${name}: public pick(list) and the fast path pick alike, and as SPEC 4 says, over random states`, () => {
      for (const seed of [1, 2, 3, 4]) {
        const rng = new Rng(seed);
        const n = rng.int(2, 40);
        const sources: FakeSource[] = Array.from({ length: n }, (_, i) => ({
          ordinal: i,
          index: i,
          bindOrder: i + 1,
          priority: undefined,
          weight: rng.int(1, 6),
          length: 0,
          eligible: false,
          get dueLength(): number {
            return this.length;
          },
        }));
        // The public pick sees plain views (live getters over the same sources).
        const views: SourceView[] = sources.map((s) => ({
          name: `s${s.index}`,
          index: s.index,
          priority: undefined,
          weight: s.weight,
          get length() {
            return s.length;
          },
          running: 0,
          get eligible() {
            return s.eligible;
          },
        }));
        const slow = Strategy[name].create();
        const fast = fastPickerOf(Strategy[name].create()) as FastPicker;
        const reference = referencePicker(name);
        const set = new EligibleSet();
        set.reset(64);
        const list = sources as unknown as Lane[];
        for (const source of list) fast[BOUND]?.(source);
        for (let step = 0; step < 3000; step++) {
          // Change a few sources: eligibility (through the notes the dispatcher sends) and length.
          for (let k = rng.int(0, 3); k > 0; k--) {
            const s = sources[rng.int(0, n - 1)] as FakeSource;
            s.length = rng.chance(0.2) ? 0 : rng.int(1, 50);
            const eligible = s.length > 0 && rng.chance(0.7);
            if (eligible === s.eligible) continue;
            s.eligible = eligible;
            if (eligible) {
              set.add(s.index);
              fast[ENTERED]?.(s as unknown as Lane);
            } else {
              set.delete(s.index);
              fast[LEFT]?.(s as unknown as Lane);
            }
          }
          if (set.size === 0) continue;
          const expected = reference(sources);
          const bySlow = slow.pick(views).index;
          const byFast = (fast[PICK_ELIGIBLE](set, list) as unknown as FakeSource).index;
          if (bySlow !== expected || byFast !== expected) {
            expect({ seed, step, bySlow, byFast }).toEqual({ seed, step, bySlow: expected, byFast: expected });
          }
        }
      }
    });
  }
});
