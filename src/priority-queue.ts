import * as check from './internal/validate.js';
import type { JobGroup, JobHandle } from './job.js';
import type { AddOptions } from './add-options.js';
import { Source } from './source.js';

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
export class PriorityQueue<in out T = unknown, R = unknown> extends Source<T, R> {
  /**
   * Adds a job with a priority (a finite number, lower runs first). Throws, and de-duplicates by
   * `id`, like `Queue.add` (a de-duplicated add ignores its priority too).
   */
  add(data: T, priority: number, options?: AddOptions): JobHandle<R> {
    check.finiteNumber('priority-queue add(data, priority)', priority);
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    const refused = this.refusal(1);
    if (refused !== undefined) throw refused;
    return this.enqueue(data, priority, parsed);
  }

  /** Like {@link PriorityQueue.add}, but returns `undefined` instead of throwing when full or closed (a bad argument still throws). */
  tryAdd(data: T, priority: number, options?: AddOptions): JobHandle<R> | undefined {
    check.finiteNumber('priority-queue tryAdd(data, priority)', priority);
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    return this.refusal(1) === undefined ? this.enqueue(data, priority, parsed) : undefined;
  }

  /**
   * Adds many jobs at once, all or nothing (see `Queue.addAll`).
   *
   * @example
   * ```ts
   * pq.addAll([{ data: 'urgent', priority: 0 }, { data: 'later', priority: 5 }]);
   * ```
   */
  addAll(items: readonly PriorityItem<T>[], options?: AddOptions): JobGroup<R> {
    if (!Array.isArray(items)) throw new TypeError('qmux: priority-queue addAll(items) takes an array of { data, priority }');
    for (const item of items) check.finiteNumber('priority-queue addAll item "priority"', item?.priority);
    return this.enqueueAll(
      items.map((item) => ({ data: item.data, priority: item.priority })),
      options,
    );
  }
}
