/**
 * The turn order between keys with equal weights (SPEC 10), against a reference model: round-robin
 * among the eligible keys in the order they became active. A new key joins the end; a key that
 * cannot run keeps its place and is skipped without spending a turn; a forgotten key that comes
 * back is a new key. The model knows nothing of how the queue keeps its keys: it walks every
 * active key from the one served last, which is what "keeps its place" means.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Worker } from '../src/index.js';
import { Gate, flushMicrotasks } from './helpers.js';
import { Rng } from './sim/prng.js';

beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2030, 0, 1) });
});

afterEach(() => {
  vi.useRealTimers();
});

interface ModelKey {
  /** Activation order: its place in the turn order. */
  order: number;
  due: number;
  /** Due times of its delayed jobs. */
  delayed: number[];
  running: number;
  paused: boolean;
}

/** What the turn order should do, from the rules alone. */
class TurnModel {
  readonly keys = new Map<string, ModelKey>();
  #activations = 0;
  /** The place of the key served last (it may be forgotten since): the next turn is after it. */
  #last = -1;
  running = 0;

  constructor(
    readonly concurrency: number,
    readonly keyConcurrency: number,
  ) {}

  #key(name: string): ModelKey {
    let key = this.keys.get(name);
    if (key === undefined) {
      key = { order: this.#activations++, due: 0, delayed: [], running: 0, paused: false };
      this.keys.set(name, key);
    }
    return key;
  }

  /** Forgets `name` if it is not active any more (nothing waiting or running, not paused). */
  #settle(name: string): void {
    const key = this.keys.get(name);
    if (key !== undefined && key.due === 0 && key.delayed.length === 0 && key.running === 0 && !key.paused) this.keys.delete(name);
  }

  add(name: string, dueAt: number | undefined): void {
    const key = this.#key(name);
    if (dueAt === undefined) key.due++;
    else key.delayed.push(dueAt);
  }

  pause(name: string): void {
    this.#key(name).paused = true;
  }

  resume(name: string): void {
    const key = this.keys.get(name);
    if (key === undefined) return;
    key.paused = false;
    this.#settle(name);
  }

  finished(name: string): void {
    const key = this.keys.get(name) as ModelKey;
    key.running--;
    this.running--;
    this.#settle(name);
  }

  /** Time reached `now`: delayed jobs due by then are due. */
  advance(now: number): void {
    for (const key of this.keys.values()) {
      const left = key.delayed.filter((at) => at > now);
      key.due += key.delayed.length - left.length;
      key.delayed = left;
    }
  }

  #eligible(key: ModelKey): boolean {
    return key.due > 0 && !key.paused && key.running < this.keyConcurrency;
  }

  /** The starts the worker should make now, in order. */
  fill(): string[] {
    const starts: string[] = [];
    while (this.running < this.concurrency) {
      let next: [string, ModelKey] | undefined;
      let first: [string, ModelKey] | undefined;
      for (const entry of this.keys) {
        const key = entry[1];
        if (!this.#eligible(key)) continue;
        if (first === undefined || key.order < first[1].order) first = entry;
        if (key.order > this.#last && (next === undefined || key.order < next[1].order)) next = entry;
      }
      const chosen = next ?? first;
      if (chosen === undefined) break;
      const [name, key] = chosen;
      key.due--;
      key.running++;
      this.running++;
      this.#last = key.order;
      starts.push(name);
    }
    return starts;
  }
}

/**
 * One seeded run of 400 steps over a number of keys in `keys`. With `waves`, adds come in waves
 * (mostly adds, then mostly the oldest open job finishing), so that many keys become active and then most are forgotten.
 */
async function run(seed: number, keys: readonly [number, number], waves = false): Promise<number> {
  const rng = new Rng(seed);
  const concurrency = rng.int(1, 4);
  const keyConcurrency = rng.chance(0.5) ? Infinity : rng.int(1, 2);
  const names = Array.from({ length: rng.int(keys[0], keys[1]) }, (_, i) => `k${i}`);
  const gate = new Gate<number>();
  const worker = new Worker(gate.handler, { concurrency });
  const queue = worker.bindQueue({ keys: { by: (n: number) => names[n] as string, concurrency: keyConcurrency } });
  const model = new TurnModel(concurrency, keyConcurrency);
  const start = Date.now();
  let seen = 0;
  for (let step = 0; step < 400; step++) {
    // A wave: 60 steps of mostly adds, then 140 of mostly finishes, which forget most keys.
    const roll = !waves || step % 200 < 60 ? rng.next() : rng.chance(0.9) ? 0.5 : 0.75 + rng.next() * 0.25;
    const which = rng.int(0, names.length - 1);
    const name = names[which] as string;
    if (roll < 0.4) {
      // In waves, several adds at once (to random keys), before the worker starts any.
      for (let n = waves ? rng.int(1, 12) : 1; n > 0; n--) {
        const at = n === 1 ? which : rng.int(0, names.length - 1);
        const delay = rng.chance(0.25) ? rng.int(1, 5) : undefined;
        queue.add(at, delay === undefined ? undefined : { delay });
        model.add(names[at] as string, delay === undefined ? undefined : Date.now() - start + delay);
      }
    } else if (roll < 0.75) {
      const open = gate.started.filter((s) => !s.done);
      if (open.length > 0) {
        const job = waves ? (open[0] as (typeof open)[number]) : rng.pick(open);
        job.finish();
        model.finished(job.job.key as string);
      }
    } else if (roll < 0.82) {
      queue.pauseKey(name);
      model.pause(name);
    } else if (roll < 0.9) {
      queue.resumeKey(name);
      model.resume(name);
    } else {
      await vi.advanceTimersByTimeAsync(1);
      model.advance(Date.now() - start);
    }
    await flushMicrotasks();
    const expected = model.fill();
    const actual = gate.started.slice(seen).map((s) => s.job.key as string);
    seen = gate.started.length;
    expect(actual, `seed ${seed}, step ${step}`).toEqual(expected);
    expect(queue.keyCount, `seed ${seed}, step ${step}: active keys`).toBe(model.keys.size);
  }
  return seen;
}

describe('the turn order between keys with equal weights', () => {
  it('is round-robin among the eligible keys in the order they became active, against a model (200 seeds)', async () => {
    let starts = 0;
    for (let seed = 1; seed <= 200; seed++) starts += await run(seed, [2, 7]);
    expect(starts).toBeGreaterThan(10_000);
  });

  it('stays so while keys come and go by the hundred (the places are numbered again as they run out and shrink)', async () => {
    let starts = 0;
    for (let seed = 1001; seed <= 1030; seed++) starts += await run(seed, [70, 300], true);
    expect(starts).toBeGreaterThan(1_000);
  });
});
