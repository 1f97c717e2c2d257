import * as check from '../internal/validate.js';
import type { JobGroup, JobHandle } from '../handles/job.js';
import type { KnownWithoutKeys, QueueAddAllOptions, QueueAddOptions } from './add-options.js';
import type { KeyArgument, KeyStats } from './keys.js';
import type { PurgeOptions } from '../api/bind-options.js';
import { Source, type SourceParts } from './source.js';

/** One entry of {@link PriorityQueue.addAll}. */
export interface PriorityItem<T> {
  /** The job's data. */
  data: T;
  /** Its priority within the queue: a finite number, lower runs first. */
  priority: number;
}

/**
 * A source whose jobs start by their own priority number (lower first), then due time, then add
 * order. Made by `worker.bindPriorityQueue()`. This orders jobs *within* the queue; the bind
 * option `priority` ranks the whole queue in the worker's list.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 * @example
 * ```ts
 * const pq = worker.bindPriorityQueue();
 * for (let i = 0; i < 10; i++) pq.add(i, i % 2); // runs 0 2 4 6 8 1 3 5 7 9
 * ```
 */
export class PriorityQueue<in out T = unknown, R = unknown, K extends boolean = boolean> extends Source<T, R> {
  /** Not for use: a worker makes its priority queues (`worker.bindPriorityQueue()`). */
  private constructor(...parts: SourceParts) {
    super(...parts);
  }

  /** @internal A priority queue of the worker that passes its parts (its `bindPriorityQueue`). */
  static make<T, R>(...parts: SourceParts): PriorityQueue<T, R> {
    return new PriorityQueue<T, R>(...parts);
  }

  /**
   * Whether it was bound with `keys`. In its type too (`K`): `worker.bindQueue()` gives a queue
   * whose key methods and `key` option fail to compile, `worker.bindQueue({ keys })` one that has them.
   */
  get keyed(): K {
    return (this.keys !== undefined) as K;
  }

  /**
   * Adds a job with a priority (a finite number, lower runs first). Throws, and de-duplicates by
   * `id`, like `Queue.add` (a de-duplicated add ignores its priority too).
   */
  add(data: T, priority: number, options?: QueueAddOptions<K>): JobHandle<R> {
    check.finiteNumber('priority-queue add(data, priority)', priority);
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    this.checkData(data);
    const key = this.keyFor(data, parsed);
    const refused = this.refusal(1, key, parsed?.signal?.aborted);
    if (refused !== undefined) throw refused;
    return this.enqueue(data, priority, parsed, key);
  }

  /** Like {@link PriorityQueue.add}, but returns `undefined` instead of throwing when full or closed (a bad argument still throws). */
  tryAdd(data: T, priority: number, options?: QueueAddOptions<K>): JobHandle<R> | undefined {
    check.finiteNumber('priority-queue tryAdd(data, priority)', priority);
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    this.checkData(data);
    const key = this.keyFor(data, parsed);
    return this.refusal(1, key, parsed?.signal?.aborted) === undefined ? this.enqueue(data, priority, parsed, key) : undefined;
  }

  /**
   * Adds many jobs at once, all or nothing (see `Queue.addAll`).
   *
   * @example
   * ```ts
   * pq.addAll([{ data: 'urgent', priority: 0 }, { data: 'later', priority: 5 }]);
   * ```
   */
  addAll(items: readonly PriorityItem<T>[], options?: QueueAddAllOptions<K>): JobGroup<R> {
    if (!Array.isArray(items)) throw new TypeError('qmux: priority-queue addAll(items) takes an array of { data, priority }');
    for (const item of items) checkPriorityItem(item);
    return this.enqueueAll(
      items.map((item) => ({ data: item.data, priority: item.priority })),
      options,
    );
  }

  /**
   * Active keys of a queue bound with `keys`: keys with jobs waiting or running, paused keys, and
   * keys with starts inside their rate window. Other keys are forgotten. 0 without `keys`.
   *
   * @example
   * ```ts
   * await worker.waitUntilIdle();
   * queue.keyCount; // 0: every key drained and was forgotten
   * ```
   */
  get keyCount(): number {
    const keys = this.keys;
    if (keys === undefined) return 0;
    // A key whose last start has left its rate window is no longer active (a read: nothing is forgotten now).
    return keys.timed ? keys.keyCountAt(this.host.clock.now()) : keys.keyCount;
  }

  /**
   * Holds back the jobs of one key (a keyed queue): they stay waiting, the other keys go on. A key
   * can be paused before its jobs arrive; it is remembered until {@link PriorityQueue.resumeKey}.
   *
   * @example
   * ```ts
   * queue.pauseKey('acme');
   * ```
   */
  pauseKey(key: KeyArgument<K, 'pauseKey'>): void {
    this.pauseKeyed(key);
  }

  /**
   * Lets a paused key's jobs run again; the worker wakes by itself. Does nothing for a key that is
   * not paused.
   *
   * @example
   * ```ts
   * queue.resumeKey('acme');
   * ```
   */
  resumeKey(key: KeyArgument<K, 'resumeKey'>): void {
    this.resumeKeyed(key);
  }

  /**
   * One key's figures: `{ waiting, due, delayed, running, paused }` (all zero and not paused for a
   * key that is not active).
   *
   * @example
   * ```ts
   * const { waiting, running } = queue.keyStats('acme');
   * ```
   */
  keyStats(key: KeyArgument<K, 'keyStats'>): KeyStats {
    return this.keyStatsOf(key);
  }

  /**
   * Removes waiting jobs (due or delayed): every one, or with `{ key }` those of one key of a
   * keyed queue. Their handles settle `'cancelled'`. Running jobs are not touched.
   *
   * @returns how many jobs were removed
   * @example
   * ```ts
   * queue.purge({ key: 'acme' });
   * ```
   */
  override purge(options?: KnownWithoutKeys<K> extends true ? { key?: undefined } : PurgeOptions): number {
    return this.purgeWith(options);
  }
}

const PRIORITY_ITEM_FIELDS = ['data', 'priority'] as const;

/**
 * An item of `pq.addAll`: an object `{ data, priority }` and nothing else. Add options go in
 * `addAll`'s second argument; a field such as `id` or `delay` on an item would be dropped.
 */
function checkPriorityItem(item: unknown): void {
  if (item === null || typeof item !== 'object') {
    throw new TypeError(`qmux: priority-queue addAll(items) takes an array of { data, priority }, got an item ${check.describeValue(item)}`);
  }
  // for...in, not knownFields' Object.keys: no array per item of a large batch.
  for (const field in item) {
    if (field !== 'data' && field !== 'priority' && Object.hasOwn(item, field)) {
      throw new TypeError(
        `qmux: unknown field "${field}" in a priority-queue addAll item; allowed: ${PRIORITY_ITEM_FIELDS.join(', ')} (add options go in addAll's second argument)`,
      );
    }
  }
  check.finiteNumber('priority-queue addAll item "priority"', (item as PriorityItem<unknown>).priority);
}
