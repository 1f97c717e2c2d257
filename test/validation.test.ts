/**
 * Every bad option or argument of SPEC 2-5 throws synchronously, where the mistake is made, a
 * TypeError or RangeError whose message names what was wrong.
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Strategy, Topic, Worker, setDefaultStrategy, type AddOptions, type BindOptions, type WorkerOptions } from '../src/index.js';

/** Lets a test pass a value of the wrong type on purpose. */
function bad<T>(value: unknown): T {
  return value as T;
}

/** Runs `fn`, expecting a synchronous TypeError or RangeError whose message matches `names`. */
function expectArgumentError(fn: () => unknown, names: RegExp): void {
  let thrown: unknown;
  let returned: unknown;
  try {
    returned = fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown, `no error was thrown (returned ${String(returned)})`).toBeDefined();
  expect(thrown instanceof TypeError || thrown instanceof RangeError, `threw ${String(thrown)}`).toBe(true);
  expect((thrown as Error).message).toMatch(names);
}

const noop = (): undefined => undefined;

afterEach(() => {
  setDefaultStrategy(Strategy.Priority);
});

describe('worker options', () => {
  it.each([0, -1, 1.5, NaN, -Infinity, '2', null])('concurrency %s is refused', (concurrency) => {
    expectArgumentError(() => new Worker(noop, { concurrency: bad<number>(concurrency) }), /concurrency/);
    expectArgumentError(() => new Worker({ concurrency: bad<number>(concurrency) }), /concurrency/);
  });

  it('concurrency Infinity and positive integers are accepted', () => {
    expect(new Worker(noop, { concurrency: Infinity }).concurrency).toBe(Infinity);
    expect(new Worker(noop, { concurrency: 7 }).concurrency).toBe(7);
  });

  it.each([
    ['a string', 'RoundRobin'],
    ['an empty object', {}],
    ['an object without create', { name: 'x' }],
    ['an object without name', { create: () => ({ pick: () => undefined }) }],
    ['null', null],
    ['a number', 3],
  ])('an unknown strategy (%s) is refused', (_what, strategy) => {
    expectArgumentError(() => new Worker(noop, { strategy: bad<Strategy>(strategy) }), /strategy/);
  });

  it('a strategy whose create() returns no picker is refused at construction', () => {
    expectArgumentError(() => new Worker(noop, { strategy: bad<Strategy>({ name: 'Broken', create: () => ({}) }) }), /Broken|pick/);
  });

  it.each([
    ['a number', 42],
    ['null', null],
    ['an array', []],
    ['true', true],
  ])('a handler that is not a function (%s) is refused', (_what, handler) => {
    expectArgumentError(() => new Worker(bad<() => void>(handler), {}), /handler/);
  });

  it('options passed after a non-function handler are refused', () => {
    expectArgumentError(() => new Worker(bad<() => void>({}), { concurrency: 1 }), /handler/);
  });

  it.each([
    ['autoRun', { autoRun: 'yes' }],
    ['name', { name: '' }],
    ['name', { name: 5 }],
  ])('a bad %s is refused', (option, options) => {
    expectArgumentError(() => new Worker(noop, bad<WorkerOptions>(options)), new RegExp(option));
  });

  it('an unknown option key is refused, by name', () => {
    expectArgumentError(() => new Worker(noop, bad<WorkerOptions>({ concurency: 2 })), /concurency/);
  });

  it('options that are not an object are refused', () => {
    expectArgumentError(() => new Worker(noop, bad<WorkerOptions>(5)), /option/);
    expectArgumentError(() => new Worker(noop, bad<WorkerOptions>(null)), /option/);
  });
});

describe('bind options', () => {
  const binders = [
    ['bindQueue', (worker: Worker, options: BindOptions) => worker.bindQueue(options)],
    ['bindPriorityQueue', (worker: Worker, options: BindOptions) => worker.bindPriorityQueue(options)],
    ['subscribe', (worker: Worker, options: BindOptions) => worker.subscribe(new Topic(), options)],
  ] as const;

  const cases: [string, unknown, RegExp][] = [
    ['priority NaN', { priority: NaN }, /priority/],
    ['priority Infinity', { priority: Infinity }, /priority/],
    ['priority "1"', { priority: '1' }, /priority/],
    ['weight 0', { weight: 0 }, /weight/],
    ['weight -1', { weight: -1 }, /weight/],
    ['weight 1.5', { weight: 1.5 }, /weight/],
    ['weight "2"', { weight: '2' }, /weight/],
    ['name ""', { name: '' }, /name/],
    ['name 5', { name: 5 }, /name/],
    ['capacity 0', { capacity: 0 }, /capacity/],
    ['capacity -1', { capacity: -1 }, /capacity/],
    ['capacity 1.5', { capacity: 1.5 }, /capacity/],
    ['capacity "3"', { capacity: '3' }, /capacity/],
    ['concurrency 0', { concurrency: 0 }, /concurrency/],
    ['concurrency 2.5', { concurrency: 2.5 }, /concurrency/],
    ['concurrency NaN', { concurrency: NaN }, /concurrency/],
    ['rateLimit null', { rateLimit: null }, /rateLimit/],
    ['rateLimit 5', { rateLimit: 5 }, /rateLimit/],
    ['rateLimit without interval', { rateLimit: { limit: 1 } }, /rateLimit/],
    ['rateLimit limit 0', { rateLimit: { limit: 0, interval: 100 } }, /rateLimit/],
    ['rateLimit limit 1.5', { rateLimit: { limit: 1.5, interval: 100 } }, /rateLimit/],
    ['rateLimit interval 0', { rateLimit: { limit: 1, interval: 0 } }, /rateLimit/],
    ['rateLimit interval -5', { rateLimit: { limit: 1, interval: -5 } }, /rateLimit/],
    ['rateLimit interval NaN', { rateLimit: { limit: 1, interval: NaN } }, /rateLimit/],
    ['an unknown key', { prio: 1 }, /prio/],
    ['options that are not an object', 7, /option/],
  ];

  for (const [call, bind] of binders) {
    it.each(cases)(`${call}: %s is refused`, (_what, options, names) => {
      const worker = new Worker(noop, { autoRun: false });
      expectArgumentError(() => bind(worker, bad<BindOptions>(options)), names);
    });
  }

  it('a duplicate source name is refused, across kinds of source', () => {
    const worker = new Worker(noop, { autoRun: false });
    worker.bindQueue({ name: 'dup' });
    expectArgumentError(() => worker.bindQueue({ name: 'dup' }), /name.*dup|dup.*name/);
    expectArgumentError(() => worker.bindPriorityQueue({ name: 'dup' }), /dup/);
    expectArgumentError(() => worker.subscribe(new Topic(), { name: 'dup' }), /dup/);
  });

  it('the same name in two workers is fine, and a refused bind does not take the name', () => {
    const a = new Worker(noop, { autoRun: false });
    const b = new Worker(noop, { autoRun: false });
    a.bindQueue({ name: 'same' });
    expect(b.bindQueue({ name: 'same' }).name).toBe('same');
    expect(() => a.bindQueue({ name: 'fresh', weight: 0 })).toThrow();
    expect(a.bindQueue({ name: 'fresh' }).name).toBe('fresh');
  });

  it('generated source names are unique within a worker, also next to given ones', () => {
    const worker = new Worker(noop, { autoRun: false });
    worker.bindQueue({ name: 'queue-2' });
    const names = [worker.bindQueue(), worker.bindQueue(), worker.bindPriorityQueue(), worker.subscribe(new Topic())].map((source) => source.name);
    expect(new Set([...names, 'queue-2']).size).toBe(5);
  });

  it('subscribe() refuses something that is not a Topic', () => {
    const worker = new Worker(noop, { autoRun: false });
    expectArgumentError(() => worker.subscribe(bad<Topic>({})), /topic|Topic/);
    expectArgumentError(() => worker.subscribe(bad<Topic>(null)), /topic|Topic/);
  });
});

describe('add options', () => {
  const cases: [string, unknown, RegExp][] = [
    ['delay -1', { delay: -1 }, /delay/],
    ['delay NaN', { delay: NaN }, /delay/],
    ['delay Infinity', { delay: Infinity }, /delay/],
    ['delay "5"', { delay: '5' }, /delay/],
    ['runAt an invalid Date', { runAt: new Date('not a date') }, /runAt/],
    ['runAt a string', { runAt: '2030-01-01' }, /runAt/],
    ['runAt NaN', { runAt: NaN }, /runAt/],
    ['id 5', { id: 5 }, /id/],
    ['signal {}', { signal: {} }, /signal/],
    ['signal "abort"', { signal: 'abort' }, /signal/],
    ['delay and runAt together', { delay: 5, runAt: Date.now() + 5 }, /delay[\s\S]*runAt|runAt[\s\S]*delay/],
    ['options that are not an object', 5, /option/],
  ];

  it.each(cases)('queue.add: %s is refused and adds nothing', (_what, options, names) => {
    const worker = new Worker(noop, { autoRun: false });
    const q = worker.bindQueue();
    expectArgumentError(() => q.add(1, bad<AddOptions>(options)), names);
    expect(q.length).toBe(0);
    expect(worker.numPending).toBe(0);
  });

  it.each(cases)('queue.tryAdd throws too (it returns undefined only when full or closed): %s', (_what, options, names) => {
    const worker = new Worker(noop, { autoRun: false });
    const q = worker.bindQueue();
    expectArgumentError(() => q.tryAdd(1, bad<AddOptions>(options)), names);
    expect(q.length).toBe(0);
  });

  it.each(cases)('priority-queue add: %s is refused', (_what, options, names) => {
    const worker = new Worker(noop, { autoRun: false });
    const pq = worker.bindPriorityQueue();
    expectArgumentError(() => pq.add(1, 0, bad<AddOptions>(options)), names);
    expect(pq.length).toBe(0);
  });

  it.each(cases)('addAll: %s is refused and adds none', (_what, options, names) => {
    const worker = new Worker(noop, { autoRun: false });
    const q = worker.bindQueue();
    expectArgumentError(() => q.addAll([1, 2, 3], bad<AddOptions>(options)), names);
    expect(q.length).toBe(0);
  });

  it.each(cases)('topic.publish with subscribers: %s is refused and delivers to none', (_what, options, names) => {
    const topic = new Topic<number>();
    const worker = new Worker(noop, { autoRun: false });
    const a = worker.subscribe(topic);
    const b = worker.subscribe(topic);
    expectArgumentError(() => topic.publish(1, bad<AddOptions>(options)), names);
    expect([a.length, b.length]).toEqual([0, 0]);
  });

  it('the key option is checked by an addAll of no jobs too, as the other options are', () => {
    const worker = new Worker(noop, { autoRun: false });
    const plain = worker.bindQueue();
    const keyed = worker.bindQueue({ keys: {} });
    const keyedPq = worker.bindPriorityQueue({ keys: {} });
    expect(() => plain.addAll([], bad<AddOptions>({ key: 'k' }))).toThrow(TypeError);
    expect(() => worker.bindPriorityQueue().addAll([], bad<AddOptions>({ key: 'k' }))).toThrow(TypeError);
    for (const key of [Number.NaN, {}]) {
      expect(() => keyed.addAll([], bad<AddOptions>({ key })), String(key)).toThrow(TypeError);
      expect(() => keyedPq.addAll([], bad<AddOptions>({ key })), String(key)).toThrow(TypeError);
    }
    expect(keyed.addAll([], { key: 'fine' }).handles).toEqual([]);
  });

  it('an unknown key is refused by add, tryAdd, priority-queue add, addAll and publish', () => {
    const worker = new Worker(noop, { autoRun: false });
    const q = worker.bindQueue();
    const pq = worker.bindPriorityQueue();
    const topic = new Topic<number>();
    const sub = worker.subscribe(topic);
    const typo = bad<AddOptions>({ dealy: 5000 });
    expectArgumentError(() => q.add(1, typo), /dealy/);
    expectArgumentError(() => q.tryAdd(1, typo), /dealy/);
    expectArgumentError(() => pq.add(1, 0, typo), /dealy/);
    expectArgumentError(() => q.addAll([1], typo), /dealy/);
    expectArgumentError(() => topic.publish(1, typo), /dealy/);
    expect([q.length, pq.length, sub.length]).toEqual([0, 0, 0]);
  });

  it('topic.publish checks its options even with no subscriber', () => {
    const topic = new Topic<number>();
    for (const [what, options, names] of cases) {
      expect(() => topic.publish(1, bad<AddOptions>(options)), what).toThrow(names);
    }
  });

  it('addAll refuses something that is not an array', () => {
    const worker = new Worker(noop, { autoRun: false });
    expectArgumentError(() => worker.bindQueue().addAll(bad<number[]>('abc')), /addAll/);
  });

  it('are checked before room: a bad option throws on a full or closed source too, and tryAdd does not hide it', () => {
    const worker = new Worker(noop, { autoRun: false });
    const full = worker.bindQueue({ capacity: 1 });
    full.add(0);
    const closed = worker.bindQueue();
    closed.close();
    const pq = worker.bindPriorityQueue({ capacity: 1 });
    pq.add(0, 0);
    const typo = bad<AddOptions>({ priorty: 1 });
    for (const q of [full, closed]) {
      expect(() => q.add(1, { delay: -1 })).toThrow(RangeError);
      expect(() => q.tryAdd(1, typo)).toThrow('qmux: unknown add option "priorty"');
      expect(() => q.addAll([1], { delay: -1 })).toThrow(RangeError);
    }
    expect(() => pq.tryAdd(1, 1, { delay: -1 })).toThrow(RangeError);
    expect(() => pq.addAll([{ data: 1, priority: 1 }], typo)).toThrow(TypeError);
    // Good options on a full or closed source: refused as before.
    expect(full.tryAdd(1, { delay: 5 })).toBeUndefined();
    expect(closed.tryAdd(1)).toBeUndefined();
    expect([full.length, closed.length, pq.length]).toEqual([1, 0, 1]);
  });
});

describe('priority-queue priority', () => {
  it.each([
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['"1"', '1'],
    ['undefined', undefined],
    ['null', null],
  ])('add(data, %s) is refused', (_what, priority) => {
    const worker = new Worker(noop, { autoRun: false });
    const pq = worker.bindPriorityQueue();
    expectArgumentError(() => pq.add('x', bad<number>(priority)), /priority/);
    expectArgumentError(() => pq.tryAdd('x', bad<number>(priority)), /priority/);
    expectArgumentError(
      () =>
        pq.addAll([
          { data: 'ok', priority: 1 },
          { data: 'x', priority: bad<number>(priority) },
        ]),
      /priority/,
    );
    expect(pq.length).toBe(0);
  });

  it('addAll refuses an item that is not { data, priority }, or has other fields, and adds none', () => {
    const worker = new Worker(noop, { autoRun: false });
    const pq = worker.bindPriorityQueue();
    const ok = { data: 'ok', priority: 1 };
    expect(() => pq.addAll([ok, bad<{ data: string; priority: number }>(null)])).toThrow(
      'qmux: priority-queue addAll(items) takes an array of { data, priority }, got an item null',
    );
    // Add options on an item would be dropped: an id that de-duplicates nothing, a delay not kept.
    for (const field of ['id', 'delay', 'prio']) {
      const item = bad<{ data: string; priority: number }>({ data: 'x', priority: 0, [field]: 1 });
      expect(() => pq.addAll([ok, item]), field).toThrow(`qmux: unknown field "${field}" in a priority-queue addAll item; allowed: data, priority`);
    }
    expect(pq.length).toBe(0);
    // An item made by a class (fields of its own only count) is fine.
    class Item {
      constructor(
        readonly data: string,
        readonly priority: number,
      ) {}
      describe(): string {
        return this.data;
      }
    }
    pq.addAll([new Item('y', 2)]);
    expect(pq.length).toBe(1);
  });
});

describe('addAll and transfer', () => {
  it('addAll refuses "transfer" (a buffer moves into one thread only), on a queue and a priority queue, and adds none', () => {
    const worker = new Worker<number>(new URL('./fixtures/threads/crash.mjs', import.meta.url), { autoRun: false });
    const q = worker.bindQueue();
    const pq = worker.bindPriorityQueue();
    const buffer = new ArrayBuffer(8);
    // @ts-expect-error: addAll takes no transfer
    expect(() => q.addAll([1, 2], { transfer: [buffer] })).toThrow('qmux: addAll() takes no "transfer" option');
    // @ts-expect-error: addAll takes no transfer
    expect(() => pq.addAll([{ data: 1, priority: 0 }], { transfer: [buffer] })).toThrow('qmux: addAll() takes no "transfer" option');
    expect([q.length, pq.length, buffer.byteLength]).toEqual([0, 0, 8]);
  });

  it('add refuses a transfer item that cannot move, naming the option and the index, and adds nothing', () => {
    const worker = new Worker<unknown>(new URL('./fixtures/threads/crash.mjs', import.meta.url), { autoRun: false });
    const q = worker.bindQueue();
    const buffer = new ArrayBuffer(8);
    const cases: [unknown, string][] = [
      [{ a: 1 }, 'qmux: add option "transfer" must be an array of ArrayBuffers, got a plain object at index 1'],
      [new Uint8Array(buffer), 'qmux: add option "transfer" takes ArrayBuffers, got a Uint8Array at index 1: give its .buffer'],
      [new SharedArrayBuffer(4), 'qmux: add option "transfer" cannot move a SharedArrayBuffer (index 1)'],
      [7, 'qmux: add option "transfer" must be an array of ArrayBuffers, got 7 at index 1'],
    ];
    for (const [item, message] of cases) {
      expect(() => q.add(1, { transfer: [new ArrayBuffer(1), bad<ArrayBuffer>(item)] })).toThrow(message);
    }
    expect(q.length).toBe(0);
    q.add(1, { transfer: [buffer] });
    expect([q.length, buffer.byteLength]).toEqual([1, 8]); // moved only when the job runs
  });
});

describe('setConcurrency', () => {
  it.each([0, -1, 1.5, NaN, '2', undefined])('setConcurrency(%s) is refused and changes nothing', (value) => {
    const worker = new Worker(noop, { concurrency: 3 });
    expectArgumentError(() => worker.setConcurrency(bad<number>(value)), /concurrency/);
    expect(worker.concurrency).toBe(3);
  });
});

describe('setDefaultStrategy', () => {
  it.each([
    ['a string', 'RoundRobin'],
    ['an empty object', {}],
    ['null', null],
    ['undefined', undefined],
  ])('setDefaultStrategy(%s) is refused and changes nothing', (_what, value) => {
    expectArgumentError(() => setDefaultStrategy(bad<Strategy>(value)), /strategy/i);
    expect(new Worker(noop).strategy).toBe(Strategy.Priority);
  });
});

describe('onSizeLessThan', () => {
  it.each([NaN, '3', undefined])('onSizeLessThan(%s) throws synchronously', (n) => {
    const worker = new Worker(noop, { autoRun: false });
    const q = worker.bindQueue();
    expectArgumentError(() => q.onSizeLessThan(bad<number>(n)), /onSizeLessThan/);
  });
});

describe('options whose contents used to slip through', () => {
  /** Runs `fn`, expecting a synchronous error of class `kind` whose message contains every part. */
  function expectThrown(fn: () => unknown, kind: typeof TypeError | typeof RangeError, ...parts: string[]): Error {
    let thrown: unknown;
    try {
      fn();
    } catch (error) {
      thrown = error;
    }
    expect(thrown, 'nothing was thrown').toBeInstanceOf(Error);
    expect((thrown as Error).constructor, String(thrown)).toBe(kind);
    for (const part of parts) expect((thrown as Error).message).toContain(part);
    return thrown as Error;
  }

  const ECHO = new URL('./fixtures/threads/echo.mjs', import.meta.url);

  it.each([
    ['bindQueue', (worker: Worker, options: BindOptions) => worker.bindQueue(options)],
    ['bindPriorityQueue', (worker: Worker, options: BindOptions) => worker.bindPriorityQueue(options)],
    ['subscribe', (worker: Worker, options: BindOptions) => worker.subscribe(new Topic(), options)],
  ] as const)('%s: a rateLimit with an unknown key (burst) is a TypeError naming the key and the allowed ones', (_call, bind) => {
    const worker = new Worker(noop, { autoRun: false });
    const options = bad<BindOptions>({ rateLimit: { limit: 5, interval: 1000, burst: 10 } });
    expectThrown(() => bind(worker, options), TypeError, '"burst"', 'rateLimit', 'limit, interval');
    expect(worker.bindQueue({ rateLimit: { limit: 5, interval: 1000 } }).name).toBeTruthy();
  });

  it.each([
    ['null', null],
    ['"5"', '5'],
    ['true', true],
  ])('deadLetterLimit %s is a TypeError naming the option', (_what, limit) => {
    expectThrown(() => new Worker(noop, bad<WorkerOptions>({ deadLetterLimit: limit })), TypeError, 'deadLetterLimit', 'integer >= 0');
  });

  it('deadLetterLimit -1 and 1.5 stay RangeErrors, 0 and 5 are accepted', () => {
    expectThrown(() => new Worker(noop, { deadLetterLimit: -1 }), RangeError, 'deadLetterLimit');
    expectThrown(() => new Worker(noop, { deadLetterLimit: 1.5 }), RangeError, 'deadLetterLimit');
    expect(() => new Worker(noop, { deadLetterLimit: 0 })).not.toThrow();
    expect(() => new Worker(noop, { deadLetterLimit: 5 })).not.toThrow();
  });

  it('a bigint is described as a bigint (10n), not as the number 10', () => {
    const ten = bad<number>(10n);
    const got10n = (error: Error) => expect(error.message).toMatch(/got 10n$/);
    got10n(expectThrown(() => new Worker(noop, { concurrency: ten }), TypeError, 'worker option "concurrency"'));
    got10n(expectThrown(() => new Worker(ECHO, { concurrency: ten }), TypeError, 'worker option "concurrency"'));
    got10n(expectThrown(() => new Worker(noop, { autoRun: false }).bindQueue({ capacity: ten }), TypeError, 'capacity'));
    got10n(expectThrown(() => new Worker(noop, { autoRun: false }).setConcurrency(ten), TypeError, 'setConcurrency'));
    got10n(expectThrown(() => new Worker(noop, { autoRun: false }).bindQueue().add(1, { delay: ten }), TypeError, 'delay'));
    got10n(expectThrown(() => new Worker(noop, { deadLetterLimit: ten }), TypeError, 'deadLetterLimit'));
  });

  it.each([
    ['a negative value', { maxOldGenerationSizeMb: -1 }, RangeError, ['"resourceLimits.maxOldGenerationSizeMb"', 'finite number > 0', 'got -1']],
    ['zero', { stackSizeMb: 0 }, RangeError, ['"resourceLimits.stackSizeMb"', 'got 0']],
    ['Infinity', { codeRangeSizeMb: Infinity }, RangeError, ['"resourceLimits.codeRangeSizeMb"', 'got Infinity']],
    ['NaN', { maxYoungGenerationSizeMb: NaN }, RangeError, ['"resourceLimits.maxYoungGenerationSizeMb"', 'got NaN']],
    ['a string', { maxOldGenerationSizeMb: '64' }, TypeError, ['"resourceLimits.maxOldGenerationSizeMb"', 'got "64"']],
    [
      'a typo key',
      { maxOldGenSizeMb: 64 },
      TypeError,
      ['"maxOldGenSizeMb"', 'resourceLimits', 'maxYoungGenerationSizeMb, maxOldGenerationSizeMb, codeRangeSizeMb, stackSizeMb'],
    ],
  ] as const)('resourceLimits with %s is refused at construction, naming the field', (_what, limits, kind, parts) => {
    expectThrown(() => new Worker(ECHO, { autoRun: false, resourceLimits: bad<never>(limits) }), kind, ...parts);
  });

  it('resourceLimits with every allowed field positive is accepted', () => {
    const limits = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 64.5, codeRangeSizeMb: 16, stackSizeMb: 4 };
    expect(() => new Worker(ECHO, { autoRun: false, resourceLimits: limits })).not.toThrow();
    expect(() => new Worker(ECHO, { autoRun: false, resourceLimits: {} })).not.toThrow();
  });

  it('minThreads above concurrency is a RangeError naming both, not clamped silently', () => {
    expectThrown(() => new Worker(ECHO, { concurrency: 2, minThreads: 3 }), RangeError, '"minThreads"', '"concurrency"', '3', '2');
    expect(() => new Worker(ECHO, { concurrency: 2, minThreads: 2, autoRun: false })).not.toThrow();
  });

  it('an empty string as the handler module is a TypeError (it used to name the current directory)', () => {
    expectThrown(() => new Worker(''), TypeError, 'new Worker(handler)', 'empty');
  });

  it.each([
    ['an http: URL', new URL('http://example.com/handler.mjs')],
    ['an https: URL string', 'https://example.com/handler.mjs'],
    ['a data: URL', new URL('data:text/javascript,export default () => 1')],
  ])('%s as the handler module is a TypeError saying a file: URL is needed', (_what, handler) => {
    expectThrown(() => new Worker(bad<URL>(handler)), TypeError, 'new Worker(handler)', 'must be a file: URL', `got ${String(handler)}`);
  });

  it('a directory as the handler module (path or URL) is refused at construction, naming it', () => {
    const dir = fileURLToPath(new URL('./fixtures/threads/', import.meta.url));
    expectThrown(() => new Worker(dir), TypeError, 'new Worker(handler)', pathToFileURL(dir).href.replace(/\/$/, ''), 'directory');
    expectThrown(() => new Worker(new URL('./fixtures/threads/', import.meta.url)), TypeError, 'directory');
  });

  it('a relative path is still resolved from the current directory', () => {
    const relative = path.relative(process.cwd(), fileURLToPath(ECHO));
    expect(() => new Worker(relative, { autoRun: false })).not.toThrow();
    expectThrown(() => new Worker(`${relative}.missing`), TypeError, 'does not exist', pathToFileURL(path.resolve(`${relative}.missing`)).href);
  });
});
