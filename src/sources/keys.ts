import type { KnownWithoutKeys } from './add-options.js';
import type { KeyLimits } from '../core/keys/keyed-jobs.js';
import * as check from '../internal/validate.js';
import type { RateLimit } from '../api/bind-options.js';

/**
 * The `keys` bind option of `bindQueue` and `bindPriorityQueue` (SPEC 10): the queue splits its
 * waiting jobs by a key (a tenant, a user, a host) and takes turns between keys, so one key with
 * many jobs cannot starve the others. Every field is optional.
 *
 * @typeParam T - job data
 * @example
 * ```ts
 * const exports = worker.bindQueue({
 *   keys: { by: (data) => data.tenant, concurrency: 2, capacity: 10_000,
 *           rateLimit: { limit: 10, interval: 1000 }, weight: (key) => (plans[key] === 'pro' ? 5 : 1) },
 * });
 * ```
 */
export interface KeysOptions<T = unknown> {
  /** The key of a job added without the `key` option: a string or a finite number. */
  by?: (data: T) => string | number;
  /** Most jobs of one key running at once: a positive integer or Infinity. Default unlimited. */
  concurrency?: number;
  /** At most `limit` starts of one key in any window of `interval` ms (`limit` an integer >= 1, `interval` > 0). */
  rateLimit?: RateLimit;
  /** Most jobs of one key waiting (due or delayed): an add beyond it throws `QueueFullError` naming the key. Default unlimited. */
  capacity?: number;
  /**
   * The key's share of the starts, called with `String(key)` each time the key becomes active:
   * a positive finite number. Without it every key has the same share (plain round-robin).
   */
  weight?: (key: string) => number;
}

/**
 * The `K` a key method's `this` must have: `never` for a queue known to be bound without `keys`
 * (the call fails to compile, as it throws), else `K` itself.
 */
export type KeyedOnly<K extends boolean> = KnownWithoutKeys<K> extends true ? never : K;

/**
 * The key argument of a key method (`pauseKey`, `resumeKey`, `keyStats`): a string or a finite
 * number, or, for a queue known to be bound without `keys`, a type no key has whose text says
 * why, so that the compile error names the cause (it throws at run time):
 * `Argument of type '"acme"' is not assignable to parameter of type '"pauseKey() needs a queue bound with keys ..."'`.
 *
 * @typeParam K - the queue's `K` (see {@link KnownWithoutKeys})
 * @typeParam M - the method's name
 */
export type KeyArgument<K extends boolean, M extends string> =
  KnownWithoutKeys<K> extends true
    ? `${M}() needs a queue bound with keys: bindQueue({ keys: { by } }) or bindPriorityQueue({ keys: { by } })`
    : string | number;

export type { KeyStats } from '../api/keys.js';

const KEYS_FIELDS = ['by', 'concurrency', 'rateLimit', 'capacity', 'weight'] as const;

/** Checks the `keys` bind option and returns the limits it sets. @internal */
export function checkKeysOptions(options: unknown): KeyLimits {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(
      `qmux: bind option "keys" must be an object { by, concurrency, rateLimit, capacity, weight }, got ${check.describeValue(options)}`,
    );
  }
  check.knownFields('bind option "keys"', options, KEYS_FIELDS);
  const keys = options as KeysOptions;
  if (keys.by !== undefined && typeof keys.by !== 'function') {
    throw new TypeError(`qmux: bind option "keys.by" must be a function (data) => key, got ${check.describeValue(keys.by)}`);
  }
  if (keys.weight !== undefined && typeof keys.weight !== 'function') {
    throw new TypeError(`qmux: bind option "keys.weight" must be a function (key) => weight, got ${check.describeValue(keys.weight)}`);
  }
  const concurrency = keys.concurrency === undefined ? Infinity : check.positiveIntOrInfinity('bind option "keys.concurrency"', keys.concurrency);
  const capacity = keys.capacity === undefined ? Infinity : check.positiveIntOrInfinity('bind option "keys.capacity"', keys.capacity);
  let rateLimit: KeyLimits['rateLimit'];
  const rate = keys.rateLimit;
  if (rate !== undefined) {
    if (rate === null || typeof rate !== 'object') {
      throw new TypeError(`qmux: bind option "keys.rateLimit" must be an object { limit, interval }, got ${check.describeValue(rate)}`);
    }
    check.knownFields('bind option "keys.rateLimit"', rate, ['limit', 'interval']);
    check.positiveInt('bind option "keys.rateLimit.limit"', rate.limit);
    check.finiteNumber('bind option "keys.rateLimit.interval"', rate.interval);
    if (rate.interval <= 0) throw new RangeError(`qmux: bind option "keys.rateLimit.interval" must be > 0 ms, got ${rate.interval}`);
    rateLimit = { limit: rate.limit, interval: rate.interval };
  }
  return { concurrency, capacity, rateLimit, weighted: keys.weight !== undefined };
}

/** A weight returned by `keys.weight`: a positive finite number. @internal */
export function checkWeight(key: string, weight: unknown): number {
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0) {
    const error = typeof weight !== 'number' ? TypeError : RangeError;
    throw new error(
      `qmux: bind option "keys.weight" must return a positive finite number, got ${check.describeValue(weight)} for key ${JSON.stringify(key)}`,
    );
  }
  return weight;
}
