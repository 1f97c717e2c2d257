import type { ResourceLimits } from 'node:worker_threads';
import * as check from '../internal/validate.js';

/** Options for a threads worker, passed through to tinypool. */
export interface ThreadPoolOptions {
  /** Threads kept alive even when idle (an integer >= 0, at most `concurrency`). Default 0. */
  minThreads?: number;
  /** Ms an idle thread above `minThreads` lives before it is released (a finite number >= 0). Default 1000. */
  idleTimeout?: number;
  /**
   * Memory limits of each thread (`node:worker_threads` `ResourceLimits`: `maxYoungGenerationSizeMb`,
   * `maxOldGenerationSizeMb`, `codeRangeSizeMb`, `stackSizeMb`, each a finite number > 0); a thread
   * past them crashes, failing its job.
   */
  resourceLimits?: ResourceLimits;
}

/** The most threads one worker may have (the shared abort table has this many cells). */
export const MAX_THREADS = 1024;

/**
 * A threads worker's concurrency is its number of threads: an integer from 1 to {@link MAX_THREADS}.
 * (`Infinity` threads means nothing, and more than the abort table holds would overrun it.)
 *
 * @internal
 */
export function checkThreadCount(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_THREADS) {
    const error = typeof value === 'number' ? RangeError : TypeError;
    throw new error(
      `qmux: ${name} of a threads worker is its number of threads: an integer from 1 to ${MAX_THREADS}, got ${check.describeValue(value)}`,
    );
  }
  return value;
}

/** The fields of `node:worker_threads` `ResourceLimits`. */
const RESOURCE_LIMITS = ['maxYoungGenerationSizeMb', 'maxOldGenerationSizeMb', 'codeRangeSizeMb', 'stackSizeMb'] as const;

/**
 * `resourceLimits`: an object of `ResourceLimits` fields, each a finite number of MB > 0. Node
 * does not check them: a misspelt field or a negative stack size is ignored, and a negative heap
 * limit kills every thread as it starts, so every job would fail. `name` ends in a quoted option
 * name (`worker option "resourceLimits"`); a field's name goes inside the quotes.
 *
 * @internal
 */
export function checkResourceLimits(name: string, value: unknown): void {
  check.optionsObject(name, value);
  if (value === undefined) return;
  check.knownFields(name, value as object, RESOURCE_LIMITS);
  const field = (key: string): string => name.replace(/"$/, `.${key}"`);
  for (const key of RESOURCE_LIMITS) {
    const limit = (value as ResourceLimits)[key];
    if (limit !== undefined) check.positiveFiniteNumber(field(key), limit);
  }
}
