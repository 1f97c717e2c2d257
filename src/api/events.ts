import type { InvariantError } from './errors.js';
import type { Job, JobHandle, JobProgress } from './jobs.js';

/**
 * A job as events report it: what the handler sees and what `add` returned, in one object.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 */
export interface TrackedJob<T, R> extends Job<T>, JobHandle<R> {}

/**
 * The events a worker emits, with their arguments. Listeners are type-checked against this map.
 *
 * @example
 * ```ts
 * worker.on('completed', (job, result) => console.log(job.id, result));
 * worker.on('failed', (job, error) => console.error(job.source, error));
 * ```
 */
export interface WorkerEvents<T = unknown, R = unknown> {
  /** A job started. */
  active: [job: TrackedJob<T, R>];
  /** A job's handler returned (or resolved) `result`. */
  completed: [job: TrackedJob<T, R>, result: R];
  /** A job failed for good (its last attempt failed, or `retryIf` said no) with `error`. */
  failed: [job: TrackedJob<T, R>, error: unknown];
  /**
   * An attempt failed with `error` and the job will be tried again in `delayMs`; `undefined`
   * for a remote job, whose engine runs it again when its own backoff says (SPEC 9).
   */
  retrying: [job: TrackedJob<T, R>, error: unknown, delayMs: number | undefined];
  /** A job that failed for good was kept in `worker.deadLetters`. */
  dead: [job: TrackedJob<T, R>, error: unknown];
  /** A running job's handler reported progress (`job.updateProgress(value)`, or `ctx.updateProgress` in a thread). */
  progress: [job: TrackedJob<T, R>, value: JobProgress];
  /** A job was cancelled (handle, signal or purge), waiting or running. */
  cancelled: [job: TrackedJob<T, R>];
  /** The worker went from having work to none: nothing runs, nothing waits. */
  idle: [];
  /** `pause()` took effect. */
  paused: [];
  /** `resume()` took effect. */
  resumed: [];
  /** `stop()` finished: no job of this worker is running. */
  stopped: [];
  /** A broken invariant fail-stopped the worker; see `InvariantError`. */
  halted: [error: InvariantError];
  /**
   * The worker became degraded: repeated thread crashes (the error is the crash that made it so),
   * or a remote source that cannot reach its engine (a `RemoteSourceError`). `health()` gives the reason.
   */
  degraded: [error: unknown];
  /**
   * A fault that is neither a job's failure nor a broken invariant: a listener or a retry hook
   * that threw, a thread pool error, a remote source's fault (`RemoteSourceError`, `LostLocksError`).
   */
  error: [error: unknown];
}
