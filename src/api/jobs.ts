/**
 * A progress report (BullMQ's type): a number (a percentage, say), a string, a boolean or an
 * object (`{ done: 3, total: 10 }`). In threads it is structured-cloned.
 */
export type JobProgress = number | string | boolean | object;

/** Where a job is in its life. */
export type JobStatus = 'waiting' | 'delayed' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/**
 * What a handler receives: one job to do. It is the same object as the job's
 * {@link JobHandle}, so it is a thenable too: a promise resolved with it waits for the job's
 * result. Keep it out of an `async` function's return value (and a `resolve(...)`): wrap it
 * (`{ job }`), or a handler that returns it waits for itself.
 *
 * @typeParam T - the job's data
 */
export interface Job<T> {
  /** The job's id: the `id` add option, or a generated one unique within the process. */
  readonly id: string;
  /** The data given to `add`. */
  readonly data: T;
  /** Which attempt this is, starting at 1. */
  readonly attempt: number;
  /**
   * Aborts when this attempt should stop: with a {@link CancelledError} as the reason when the job
   * is cancelled while it runs (`handle.cancel()`, its `signal` add option, a registry shutdown
   * at its timeout), with a {@link TimeoutError} when the attempt outlives its `timeout` (the
   * worker option or the add option). Pass it on to `fetch` and friends; a handler that ignores
   * it keeps its slot until it returns. Each attempt gets a fresh signal.
   */
  readonly signal: AbortSignal;
  /** Name of the source (queue, priority queue or subscription) the job came from. */
  readonly source: string;
  /** Its key (`String(key)`) in a queue bound with `keys` (SPEC 10); `undefined` elsewhere. */
  readonly key: string | undefined;
  /**
   * Reports progress: records `value` as the handle's `progress` and emits `progress (job,
   * value)`. A report after the job has settled (or between attempts) is ignored; it never
   * throws, except for `undefined`, which is not a report (a `TypeError`).
   *
   * @example
   * ```ts
   * new Worker(async (job: Job<string[]>) => {
   *   for (const [i, file] of job.data.entries()) {
   *     await convert(file);
   *     job.updateProgress({ done: i + 1, total: job.data.length });
   *   }
   * });
   * ```
   */
  updateProgress(value: JobProgress): void;
}

/**
 * What `add` returns: a handle on one job. Asking for nothing costs nothing: no promise exists
 * until {@link JobHandle.result}, {@link JobHandle.settled} or `then` (an `await`) is called, and
 * a job whose result nobody asked for never raises an unhandled rejection.
 *
 * A handle is a thenable: `await queue.add(data)` gives what the handler returned, as with
 * p-queue and p-limit (it is `await handle.result()`). The flip side of any thenable: a
 * promise resolved with a handle waits for that job's result, so an `async` function (a
 * handler, say) that returns a handle returns the job's result, not the handle; and a handler
 * that returns its own job (`async (job) => job`) waits for itself and never settles. Return
 * the handle in an object (`{ handle }`) to pass it on as it is.
 *
 * `console.log(handle)` prints `JobHandle { id, source, status, attempts }`.
 *
 * @typeParam R - what the handler returns
 * @example
 * ```ts
 * const sum = await queue.add(async () => 1 + 1); // 2
 * const handle = queue.add({ url });
 * handle.status;                // 'waiting'
 * const body = await handle.result();
 * ```
 */
export interface JobHandle<R> extends PromiseLike<R> {
  /** The job's id: the `id` add option, or a generated one unique within the process. */
  readonly id: string;
  /** Where the job is now. */
  readonly status: JobStatus;
  /** How many attempts have started so far (0 while it has not started). */
  readonly attempts: number;
  /** The latest value its handler reported with `updateProgress`: `undefined` until the first report, kept across retries. */
  readonly progress: JobProgress | undefined;
  /** Its key in a queue bound with `keys` (`String(key)`, see SPEC 10), else `undefined`. */
  readonly key: string | undefined;
  /**
   * Resolves with what the handler returned; rejects with the job's last error, or with a
   * {@link CancelledError} when it was cancelled. The same promise is returned on every call.
   */
  result(): Promise<R>;
  /** Resolves once the job has succeeded, failed or been cancelled. Never rejects. */
  settled(): Promise<void>;
  /**
   * Cancels the job. A waiting or delayed job is removed from its source; a running job's
   * `signal` is aborted (its slot stays taken until its handler returns). Either way the handle
   * settles `'cancelled'` at once. Returns false, and does nothing, if it had already settled.
   */
  cancel(reason?: unknown): boolean;
  /**
   * Makes the handle awaitable: `await handle` is `await handle.result()` (the same promise
   * underneath: nothing is made until it is called).
   */
  then<TResult1 = R, TResult2 = never>(
    onfulfilled?: ((value: R) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2>;
}

/**
 * What `addAll` returns: the handles of every job added, in add order. Like a
 * {@link JobHandle}, it is a thenable: `await queue.addAll(items)` is
 * `await group.result()` (with the same caveat: an `async` function returning a group returns
 * its results).
 *
 * @typeParam R - what the handler returns
 */
export interface JobGroup<R> extends PromiseLike<R[]> {
  /** One handle per job, in add order. */
  readonly handles: readonly JobHandle<R>[];
  /** Resolves with every result in add order; rejects with the first error, like `Promise.all`. */
  result(): Promise<R[]>;
  /** Resolves once every job has settled. Never rejects. */
  settled(): Promise<void>;
  /** Makes the group awaitable: `await group` is `await group.result()`. */
  then<TResult1 = R[], TResult2 = never>(
    onfulfilled?: ((value: R[]) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2>;
}
