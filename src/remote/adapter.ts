/**
 * The contract between a worker and a remote engine (SPEC 9): what `worker.bindRemote(adapter)`
 * asks of a queue that outlives the process. `BullMQSource` (`qmux/bullmq`) implements it for
 * BullMQ; write your own for pg-boss, NATS JetStream or anything that can hand out a job with a
 * lease (a lock) and take its outcome back.
 *
 * @module
 */
import type { BindOptions } from '../api/bind-options.js';

/**
 * One job claimed from a remote engine: the lease on it lasts `lockDuration` ms unless the
 * worker renews it with {@link RemoteAdapter.extend}. Adapters may hand out richer objects (the
 * worker gives the same object back to `complete`, `fail`, `release` and `extend`).
 *
 * @typeParam T - job data
 */
export interface RemoteJob<T = unknown> {
  /** The engine's id of the job: the handler's `job.id`. */
  readonly id: string;
  /** The job's data: the handler's `job.data`. */
  readonly data: T;
  /** Which attempt this is, from 1 (BullMQ: `attemptsMade + 1`): the handler's `job.attempt`. */
  readonly attempt: number;
  /**
   * How many attempts the engine allows this job (BullMQ: the producer's `attempts`). Without
   * {@link retries}, a failed attempt below it is reported as `retrying` (the engine will run the
   * job again), the last one as `failed`. Default 1: every failure is final.
   */
  readonly maxAttempts?: number;
  /**
   * Whether the engine runs the job again after this attempt fails with `error`: when given, it
   * alone decides between `retrying` and `failed` (BullMQ's adapter: attempts left, and not an
   * `UnrecoverableError`). Without it, an attempt below `maxAttempts` is retried.
   */
  retries?(error: unknown): boolean;
}

/**
 * What a remote engine must offer to serve as a worker's source. Every method may be called
 * while others are in flight, except `claim`, of which at most one call is in flight per source.
 * A method that cannot reach the engine rejects (the source is then degraded and the call
 * retried with backoff); one that finds the job's lease gone rejects with `LockLostError`.
 *
 * What an adapter must guarantee, for at-least-once delivery:
 * - a claimed job is given to no other consumer while its lease lasts, and goes back to the
 *   engine (to be claimed again) once the lease expires without `complete` or `fail`;
 * - `complete` and `fail` record the outcome only while the caller still holds the lease, and
 *   otherwise reject with `LockLostError` (never record the outcome of a job someone else runs);
 * - `release` puts the job back where any consumer can claim it at once, without counting an
 *   attempt.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 * @example
 * ```ts
 * const source = worker.bindRemote(myAdapter, { name: 'shared', prefetch: 8 });
 * ```
 */
export interface RemoteAdapter<T = unknown, R = unknown> {
  /** How long a claim lasts unless renewed, ms (`Infinity` if it never expires); the worker calls `extend` every half of it. */
  readonly lockDuration: number;
  /**
   * Claims up to `max` jobs (never more). May wait (long-poll) while the engine has none, and
   * must return early, with what it has (possibly nothing), once `signal` aborts. Reopens
   * connections that `close` closed.
   */
  claim(max: number, signal: AbortSignal): Promise<readonly RemoteJob<T>[]>;
  /** Records the job's success with the handler's result. */
  complete(job: RemoteJob<T>, result: R): Promise<void>;
  /** Records the failure of this attempt; the engine decides whether the job runs again. */
  fail(job: RemoteJob<T>, error: unknown): Promise<void>;
  /** Hands back a claimed job that did not start, so that any consumer can take it. */
  release(job: RemoteJob<T>): Promise<void>;
  /**
   * Renews the claims on `jobs` for another `lockDuration`. May resolve to the jobs whose claim
   * could not be renewed (lost): the worker stops renewing them and drops them if they have not
   * started.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: an adapter that renews every claim resolves to nothing
  extend(jobs: readonly RemoteJob<T>[]): Promise<void | readonly RemoteJob<T>[]>;
  /** Records a progress report of a running job (optional). */
  progress?(job: RemoteJob<T>, value: unknown): Promise<void>;
  /**
   * Tells the worker about the connection beside the calls' own answers (optional): call
   * `listener(error)` when the engine becomes unreachable, `listener(undefined)` when it is
   * reachable again. The worker calls this once, when the source is bound.
   */
  watch?(listener: (error: unknown) => void): void;
  /** Closes every connection; a later `claim` must reopen them. */
  close(): Promise<void>;
}

/**
 * Options for `worker.bindRemote(adapter, options)`: the bind options of every source, plus
 * `prefetch`.
 *
 * @example
 * ```ts
 * worker.bindRemote(new BullMQSource('emails', { connection }), { name: 'emails', weight: 3, prefetch: 4 });
 * ```
 */
export interface RemoteBindOptions extends BindOptions {
  /**
   * The most jobs the source holds claimed and not yet started: a positive integer. Default:
   * the source's `concurrency` if set, else the worker's, capped at 64 (and following
   * `setConcurrency`).
   */
  prefetch?: number;
}
