/**
 * Options for `bindQueue`, `bindPriorityQueue` and `subscribe`. All are optional.
 *
 * @example
 * ```ts
 * worker.bindQueue({ name: 'emails', priority: 2, weight: 3, capacity: 10_000,
 *                    concurrency: 4, rateLimit: { limit: 10, interval: 1000 } });
 * ```
 */
export interface BindOptions {
  /** Rank in the list: a finite number, lower goes first. Without one the source ranks after every ranked source. */
  priority?: number;
  /** Share under `Strategy.Weighted`: an integer >= 1. Default 1. */
  weight?: number;
  /** Unique within the worker. Default: generated (`queue-1`, `priority-queue-2`, `subscription-3`...). */
  name?: string;
  /** Most jobs that may wait in it (due or delayed); `add` beyond that throws `QueueFullError`. Default unlimited. */
  capacity?: number;
  /** Most of its jobs running at once (a positive integer or Infinity). Default unlimited (the worker's concurrency still applies). */
  concurrency?: number;
  /** At most `limit` of its jobs start in any window of `interval` ms. */
  rateLimit?: RateLimit;
}

/** What `purge` of a queue takes. */
export interface PurgeOptions {
  /** Remove only the waiting jobs of this key (a keyed queue). */
  key?: string | number;
}

/** A sliding-window rate limit: at most `limit` starts in any `interval` ms. */
export interface RateLimit {
  /** Starts allowed per window: an integer >= 1. */
  limit: number;
  /** Window length in ms: a finite number > 0. */
  interval: number;
}
