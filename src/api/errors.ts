/**
 * Every error qmux raises on purpose is one of these classes (or a built-in `TypeError` /
 * `RangeError` for a bad argument), so callers can tell them apart with `instanceof` or `name`.
 *
 * @module
 */
import type { WorkerStatus } from './worker-status.js';
import { isError, messageOf } from './describe.js';

/** Base class of qmux's own errors. */
export class QmuxError extends Error {
  /** @param message - what went wrong and what to do about it */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Thrown by `add` (and `publish`) when a source already holds `capacity` waiting jobs, and by
 * `addAll` when the whole batch does not fit (all or nothing: then none is added).
 * `tryAdd` returns `undefined` instead; `await queue.onSizeLessThan(n)` waits for room.
 */
export class QueueFullError extends QmuxError {
  /** Name of the full source. */
  readonly source: string;
  /** Its capacity (the per-key capacity, `keys.capacity`, when {@link key} is set). */
  readonly capacity: number;
  /** How many jobs the refused call tried to add: 1 for `add`, the batch size for `addAll`. */
  readonly requested: number;
  /** How many more jobs the source (or the key) had room for. */
  readonly free: number;
  /** The full key, when the source is a keyed queue and one key is at its `keys.capacity`. */
  readonly key: string | undefined;
  /**
   * @param source - the full source's name
   * @param capacity - its capacity
   * @param requested - how many jobs the refused call tried to add (default 1)
   * @param free - how many more it had room for (default 0)
   * @param key - the full key of a keyed queue, if it is one key that is full
   */
  constructor(source: string, capacity: number, requested = 1, free = 0, key?: string) {
    const what = key === undefined ? `source "${source}"` : `key ${JSON.stringify(key)} of source "${source}"`;
    const limit = key === undefined ? `capacity ${capacity}` : `keys.capacity ${capacity}`;
    super(
      requested <= 1
        ? `qmux: ${what} is full (${limit}); use tryAdd()${key === undefined ? ', or await onSizeLessThan() before adding' : ' or wait for its jobs to start'}`
        : `qmux: ${what} lacks room for ${requested} jobs (${free} free, ${limit}); ` +
            (requested > capacity
              ? 'a batch larger than the capacity never fits: add it in parts'
              : key === undefined
                ? `add fewer, or await onSizeLessThan(${capacity - requested + 1}) before adding them`
                : 'add fewer'),
    );
    this.source = source;
    this.capacity = capacity;
    this.requested = requested;
    this.free = free;
    this.key = key;
  }
}

/** Thrown by `add` (and `publish`) on a source that was closed with `close()`. */
export class QueueClosedError extends QmuxError {
  /** Name of the closed source. */
  readonly source: string;
  /** @param source - the closed source's name */
  constructor(source: string) {
    super(`qmux: source "${source}" is closed and takes no new jobs`);
    this.source = source;
  }
}

/**
 * The error a cancelled job's handle rejects with (`handle.cancel()`, an aborted `signal`
 * option, `queue.purge()`), and the reason its `signal` aborts with while it runs.
 */
export class CancelledError extends QmuxError {
  /** The reason given to `cancel(reason)` or the aborted signal's reason, if any. */
  readonly reason: unknown;
  /** @param reason - why the job was cancelled (any value) */
  constructor(reason?: unknown) {
    super(
      reason === undefined ? 'qmux: job cancelled' : `qmux: job cancelled: ${messageOf(reason)}`,
      isError(reason) ? { cause: reason } : undefined,
    );
    this.reason = reason;
  }
}

/**
 * Thrown by a lifecycle call made from a state that does not allow it, for example `pause()` on a
 * stopped worker. The message names the call, the state, and what would work.
 */
export class InvalidStateError extends QmuxError {
  /** The call that was refused. */
  readonly call: string;
  /** The worker's status at the time. */
  readonly status: WorkerStatus;
  /**
   * @param call - the refused call, without parentheses (`'resume'`)
   * @param status - the worker's status at the time
   * @param hint - what to do instead
   */
  constructor(call: string, status: WorkerStatus, hint: string) {
    super(`qmux: cannot ${call}() a worker that is ${status}; ${hint}`);
    this.call = call;
    this.status = status;
  }
}

/**
 * Thrown by `worker.redrive(entry)` when another job with the dead letter's id is in use in its
 * source again (added since, and not settled yet): the two would share one id. The entry stays in
 * `deadLetters`; redrive it once that job has settled (a cancelled one: once its handler has returned).
 */
export class JobIdInUseError extends QmuxError {
  /** The id in use. */
  readonly id: string;
  /** The source in which it is in use. */
  readonly source: string;
  /**
   * @param id - the job id in use
   * @param source - the source's name
   * @param status - the status of the job that holds the id
   */
  constructor(id: string, source: string, status: string) {
    // A cancelled job has settled already: what keeps its id is its handler, still running (SPEC 5).
    const wait =
      status === 'cancelled'
        ? 'cancelled job whose handler still runs; redrive the entry once that handler has returned'
        : `${status} job; redrive the entry once that job has settled`;
    super(`qmux: job id "${id}" is in use in source "${source}" by a ${wait}`);
    this.id = id;
    this.source = source;
  }
}

/**
 * A broken internal invariant (for example a custom strategy that picked an ineligible source).
 * The worker that hit it fail-stops: its status becomes `'halted'` and it starts nothing more
 * until `start()` is called again. Waiting jobs are kept.
 */
export class InvariantError extends QmuxError {
  /** Short name of the invariant that broke, such as `'picked-source-eligible'`. */
  readonly invariant: string;
  /**
   * @param invariant - short name of the invariant that broke
   * @param detail - what was seen
   */
  constructor(invariant: string, detail: string, options?: ErrorOptions) {
    super(`qmux: invariant "${invariant}" broken: ${detail}`, options);
    this.invariant = invariant;
  }
}

/**
 * A job ran longer than its `timeout`. Its `signal` aborts with this error and the attempt fails
 * (it may be retried). The handler's slot stays taken until the handler returns.
 */
export class TimeoutError extends QmuxError {
  /** The timeout that passed, in ms. */
  readonly timeout: number;
  /**
   * @param timeout - the timeout that passed, in ms
   * @param jobId - the job's id
   */
  constructor(timeout: number, jobId: string) {
    super(`qmux: job ${jobId} timed out after ${timeout} ms`);
    this.timeout = timeout;
  }
}
