import type { JobGroup, JobHandle } from '../handles/job.js';
import type { KnownWithoutKeys, QueueAddAllOptions, QueueAddOptions } from './add-options.js';
import type { KeyArgument, KeyStats } from './keys.js';
import type { PurgeOptions } from '../api/bind-options.js';
import { Source, type SourceParts } from './source.js';

/**
 * A FIFO source: jobs start in due-time order, which is add order for jobs added without
 * `delay` / `runAt`. Made by `worker.bindQueue()`.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 * @example
 * ```ts
 * const emails = worker.bindQueue({ name: 'emails', capacity: 1000 });
 * const handle = emails.add({ to: 'ada@example.com' });
 * emails.add({ to: 'bob@example.com' }, { delay: 60_000 });
 * ```
 */
export class Queue<in out T = unknown, R = unknown, K extends boolean = boolean> extends Source<T, R> {
  /** Not for use: a worker makes its queues (`worker.bindQueue()`). */
  private constructor(...parts: SourceParts) {
    super(...parts);
  }

  /** @internal A queue of the worker that passes its parts (its `bindQueue`). */
  static make<T, R>(...parts: SourceParts): Queue<T, R> {
    return new Queue<T, R>(...parts);
  }

  /**
   * Whether it was bound with `keys`. In its type too (`K`): `worker.bindQueue()` gives a queue
   * whose key methods and `key` option fail to compile, `worker.bindQueue({ keys })` one that has them.
   */
  get keyed(): K {
    return (this.keys !== undefined) as K;
  }

  /**
   * Adds a job. With an `id` in use in this queue it adds nothing and returns that job's handle
   * (even when full or closed; the options are ignored). Throws `QueueFullError` at capacity, `QueueClosedError` after `close()`, and a
   * `TypeError` / `RangeError` for a bad option.
   */
  add(data: T, options?: QueueAddOptions<K>): JobHandle<R> {
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    this.checkData(data);
    const key = this.keyFor(data, parsed);
    const refused = this.refusal(1, key, parsed?.signal?.aborted);
    if (refused !== undefined) throw refused;
    return this.enqueue(data, 0, parsed, key);
  }

  /** Like {@link Queue.add}, but returns `undefined` instead of throwing when full or closed (a bad option still throws). */
  tryAdd(data: T, options?: QueueAddOptions<K>): JobHandle<R> | undefined {
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    this.checkData(data);
    const key = this.keyFor(data, parsed);
    return this.refusal(1, key, parsed?.signal?.aborted) === undefined ? this.enqueue(data, 0, parsed, key) : undefined;
  }

  /**
   * Adds many jobs at once, all or nothing: if they do not all fit, none is added and
   * `QueueFullError` is thrown. The same options apply to each; `id` is not one of them (a `TypeError`).
   *
   * @example
   * ```ts
   * const group = queue.addAll(urls);
   * const pages = await group.result(); // in add order
   * ```
   */
  addAll(data: readonly T[], options?: QueueAddAllOptions<K>): JobGroup<R> {
    if (!Array.isArray(data)) throw new TypeError('qmux: addAll(data) takes an array of job data');
    // Array.from, not map: a hole of a sparse array is a job of undefined data, as for...of reads it.
    return this.enqueueAll(
      Array.from(data, (item) => ({ data: item, priority: 0 })),
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
   * can be paused before its jobs arrive; it is remembered until {@link Queue.resumeKey}.
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
