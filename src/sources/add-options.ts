import type { ThreadTransferable } from '../api/transferable.js';
import * as check from '../internal/validate.js';
import type { RetryOptions } from '../api/retry.js';
import { checkRetryOptions } from '../shell/retry.js';

/**
 * Options for one job. `delay` and `runAt` are exclusive: giving both fails to compile (and
 * throws a `TypeError` at run time).
 *
 * @example
 * ```ts
 * queue.add(report, { delay: 5_000, id: `report-${day}` });
 * queue.add(ping, { runAt: new Date('2027-01-01T00:00:00Z') });
 * queue.add(fetchJob, { signal: AbortSignal.timeout(10_000) });
 * ```
 */
export type AddOptions = JobOptions & (DelayOption | RunAtOption);

/**
 * Options of `addAll`: those of {@link AddOptions} but `id`, since one id cannot name a batch of
 * jobs, and `transfer`, since a buffer moves into one thread only (each a `TypeError` at run time).
 */
export type AddAllOptions = Omit<JobOptions, 'id' | 'transfer'> & (DelayOption | RunAtOption);

/**
 * Options of `topic.publish` and `tryPublish`: those of {@link AddOptions} but `key`, since a key
 * belongs to one keyed queue and a topic delivers to every subscription (a `TypeError` at run time).
 * They are also what `add` takes on a queue bound without `keys`.
 */
export type PublishOptions = Omit<JobOptions, 'key'> & (DelayOption | RunAtOption);

/**
 * The add options of a queue, by whether it was bound with `keys` (`K`): without, `key` fails to
 * compile (it throws a `TypeError`). @typeParam K - `true`, `false`, or `boolean` when not known
 */
export type QueueAddOptions<K extends boolean> = KnownWithoutKeys<K> extends true ? PublishOptions : AddOptions;

/** The `addAll` options of a queue, by whether it was bound with `keys` (`K`; see {@link QueueAddOptions}). */
export type QueueAddAllOptions<K extends boolean> =
  KnownWithoutKeys<K> extends true ? Omit<JobOptions, 'id' | 'key' | 'transfer'> & (DelayOption | RunAtOption) : AddAllOptions;

/**
 * `true` when `K` says for sure that a queue was bound without `keys`: `false` itself, not
 * `boolean`. (A queue narrowed by `instanceof` has `K` = `any`, which reads as `false` here: write
 * `source as Queue<T, R>` to call its key methods.)
 */
export type KnownWithoutKeys<K extends boolean> = [K] extends [false] ? true : false;

/**
 * The type of `runAt` beside a `delay` (and of `delay` beside a `runAt`): no value has it but
 * `undefined`, and its text is what the compile error says (`Type 'number' is not assignable to
 * type '"delay and runAt are exclusive: give one of them"'`).
 */
export type DelayOrRunAt = 'delay and runAt are exclusive: give one of them';

/** When the job becomes due, counted from now: one side of {@link AddOptions}. */
export interface DelayOption {
  /** Ms from now until the job becomes due (a finite number >= 0, any length). */
  delay?: number;
  /** Not together with `delay`. */
  runAt?: DelayOrRunAt;
}

/** When the job becomes due, as a point in time: one side of {@link AddOptions}. */
export interface RunAtOption {
  /** When the job becomes due: a `Date` or epoch ms. A time already past means due now. */
  runAt?: Date | number;
  /** Not together with `runAt`. */
  delay?: DelayOrRunAt;
}

/** The options of one job other than its due time; see {@link AddOptions}. */
export interface JobOptions {
  /**
   * The job's id: a non-empty string that is not a decimal integer (`'42'` is the form of qmux's
   * generated ids; write `'order-42'`). While a job with this id is in use in the source (from
   * the add until it has settled and no attempt of it runs), adding another with the same id
   * adds nothing and returns that job's handle. Default: a generated id, unique within the
   * process, that is never looked up.
   */
  id?: string;
  /**
   * Cancels the job when it aborts; an already-aborted signal gives a handle that is already
   * `'cancelled'`, even from a full queue (the job never joins it; a closed one still refuses).
   */
  signal?: AbortSignal;
  /** Fails an attempt that runs longer than this many ms (a finite number > 0, at most 2147483647); overrides the worker's `timeout`. */
  timeout?: number;
  /** Retry policy for this job; its fields override the worker's `retry` one by one. */
  retry?: RetryOptions;
  /**
   * Threads workers only: ArrayBuffers (or other {@link ThreadTransferable}s) to move, not copy, into the
   * thread. Moved buffers are gone from this thread, so such a job is never retried.
   */
  transfer?: readonly ThreadTransferable[];
  /**
   * The job's key in a queue bound with `keys` (a string or a finite number, compared as
   * `String(key)`); it wins over `keys.by(data)`. `undefined` and `null` count as not given. A
   * `TypeError` on any other source.
   */
  key?: string | number | null;
}

const ADD_OPTIONS = new Set(['delay', 'runAt', 'id', 'signal', 'timeout', 'retry', 'transfer', 'key']);

/** Add options once checked. @internal */
export interface ParsedAddOptions {
  delay: number | undefined;
  runAt: number | undefined;
  id: string | undefined;
  signal: AbortSignal | undefined;
  timeout: number | undefined;
  retry: RetryOptions | undefined;
  transfer: readonly ThreadTransferable[] | undefined;
  /** The `key` option as given (`null` counts as not given); the source checks it. */
  key: unknown;
  /** Whether any of id, timeout, retry or transfer is set (they live in the job's extras). */
  needsExtras: boolean;
}

/** Generated ids are decimal integers (`JobRecord.id`); a user id never takes that form, so the two never collide. */
const GENERATED_ID = /^[0-9]+$/;

/** A user-given job id: a non-empty string that is not a decimal integer. @internal */
export function checkJobId(name: string, id: unknown): string {
  if (typeof id !== 'string') throw new TypeError(`qmux: ${name} must be a string, got ${check.describeValue(id)}`);
  if (id.length === 0) throw new TypeError(`qmux: ${name} must be a non-empty string, got ""`);
  if (GENERATED_ID.test(id)) {
    throw new RangeError(
      `qmux: ${name} must not be a decimal integer, got "${id}": that is the form of qmux's generated ids; give it a prefix, such as "job-${id}"`,
    );
  }
  return id;
}

/** A timeout in ms: a finite number > 0 that a timer can wait for. @internal */
export function checkTimeout(name: string, value: unknown): number {
  check.finiteNumber(name, value);
  if ((value as number) <= 0) throw new RangeError(`qmux: ${name} must be a finite number of ms > 0, got ${String(value)}`);
  return check.timerMs(name, value as number);
}

/**
 * Checks every add option and returns them. `threads` says whether the job goes to a threads
 * worker (`transfer` needs one); `undefined` when no worker is concerned yet (a topic with no
 * subscriber still checks what it was given).
 *
 * @internal
 */
export function parseAddOptions(options: AddOptions, threads: boolean | undefined): ParsedAddOptions {
  check.optionsObject('add options', options);
  for (const key in options) {
    if (!ADD_OPTIONS.has(key)) throw new TypeError(`qmux: unknown add option "${key}"; allowed: ${[...ADD_OPTIONS].join(', ')}`);
  }
  let delay: number | undefined;
  let runAt: number | undefined;
  if (options.delay !== undefined) {
    if (options.runAt !== undefined) throw new TypeError('qmux: add options "delay" and "runAt" cannot be used together');
    delay = check.nonNegativeMs('add option "delay"', options.delay);
  } else if (options.runAt !== undefined) {
    runAt = check.dateOrEpochMs('add option "runAt"', options.runAt);
  }
  const id = options.id;
  if (id !== undefined) checkJobId('add option "id"', id);
  const signal = options.signal === undefined ? undefined : check.abortSignal('add option "signal"', options.signal);
  const timeout = options.timeout === undefined ? undefined : checkTimeout('add option "timeout"', options.timeout);
  const retry = options.retry;
  if (retry !== undefined) checkRetryOptions('add option "retry"', retry);
  const transfer = options.transfer;
  if (transfer !== undefined) {
    if (threads === false) throw new TypeError('qmux: add option "transfer" is for threads workers only');
    if (!Array.isArray(transfer)) {
      throw new TypeError(`qmux: add option "transfer" must be an array of ArrayBuffers, got ${check.describeValue(transfer)}`);
    }
    for (let i = 0; i < transfer.length; i++) checkTransferable(transfer[i], i);
  }
  return {
    delay,
    runAt,
    id,
    signal,
    timeout,
    retry,
    transfer,
    key: options.key ?? undefined,
    needsExtras: id !== undefined || timeout !== undefined || retry !== undefined || transfer !== undefined,
  };
}

/**
 * Refuses the `transfer` items that certainly cannot move (Node's own error, "Found invalid
 * object in transferList", would fail the job later and name no option): a value that is not an
 * object, a typed array or DataView (its `.buffer` moves), a SharedArrayBuffer (shared, never
 * moved) and a plain object. Other objects are left to Node: its transferables are several
 * classes (MessagePort, FileHandle, streams…), not all of them reachable from here.
 */
function checkTransferable(item: unknown, at: number): void {
  const name = `add option "transfer"`;
  if (item === null || typeof item !== 'object') {
    throw new TypeError(`qmux: ${name} must be an array of ArrayBuffers, got ${check.describeValue(item)} at index ${at}`);
  }
  if (ArrayBuffer.isView(item)) {
    throw new TypeError(`qmux: ${name} takes ArrayBuffers, got a ${item.constructor.name} at index ${at}: give its .buffer`);
  }
  if (item instanceof SharedArrayBuffer) {
    throw new TypeError(
      `qmux: ${name} cannot move a SharedArrayBuffer (index ${at}): it is shared with the thread as it is; leave it out of transfer`,
    );
  }
  const proto = Object.getPrototypeOf(item);
  if (proto === Object.prototype || proto === null) {
    throw new TypeError(`qmux: ${name} must be an array of ArrayBuffers, got a plain object at index ${at}`);
  }
}
