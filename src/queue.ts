import type { JobGroup, JobHandle } from './job.js';
import type { AddOptions } from './add-options.js';
import { Source } from './source.js';

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
export class Queue<in out T = unknown, R = unknown> extends Source<T, R> {
  /**
   * Adds a job. With an `id` in use in this queue it adds nothing and returns that job's handle
   * (even when full or closed; the options are ignored). Throws `QueueFullError` at capacity, `QueueClosedError` after `close()`, and a
   * `TypeError` / `RangeError` for a bad option.
   */
  add(data: T, options?: AddOptions): JobHandle<R> {
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    const refused = this.refusal(1);
    if (refused !== undefined) throw refused;
    return this.enqueue(data, 0, parsed);
  }

  /** Like {@link Queue.add}, but returns `undefined` instead of throwing when full or closed (a bad option still throws). */
  tryAdd(data: T, options?: AddOptions): JobHandle<R> | undefined {
    const parsed = this.parseOptions(options);
    const existing = this.existing(parsed);
    if (existing !== undefined) return existing;
    return this.refusal(1) === undefined ? this.enqueue(data, 0, parsed) : undefined;
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
  addAll(data: readonly T[], options?: AddOptions): JobGroup<R> {
    if (!Array.isArray(data)) throw new TypeError('qmux: addAll(data) takes an array of job data');
    return this.enqueueAll(
      data.map((item) => ({ data: item, priority: 0 })),
      options,
    );
  }
}
