import type { InvariantError } from './errors.js';
import type { Job, JobHandle } from './job.js';

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
  /** A job failed: its handler threw or rejected with `error`. */
  failed: [job: TrackedJob<T, R>, error: unknown];
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
  /** A fault that is neither a job's failure nor a broken invariant, such as a listener that threw. */
  error: [error: unknown];
}
