/**
 * How long to wait before retrying: a fixed or exponential schedule, or a function of the attempt
 * that failed (1 for the first) and its error, returning ms.
 */
export type Backoff = BackoffSchedule | ((attempt: number, error: unknown) => number);

/** A built-in backoff schedule. */
export interface BackoffSchedule {
  /** `fixed` waits `delay` every time; `exponential` waits `delay * 2^(attempt - 1)`. */
  type: 'fixed' | 'exponential';
  /** Base wait in ms (a finite number >= 0). */
  delay: number;
  /** Cap on the wait in ms (a finite number >= 0). Default: no cap. */
  maxDelay?: number;
  /** In [0, 1]: the wait is multiplied by a random factor in [1 - jitter, 1]. Default 0. */
  jitter?: number;
}

/**
 * Retry policy: the worker option `retry`, and the add option `retry`, whose fields override the
 * worker's one by one.
 *
 * @example
 * ```ts
 * new Worker(handler, {
 *   retry: {
 *     attempts: 5,
 *     backoff: { type: 'exponential', delay: 200, maxDelay: 10_000, jitter: 0.5 },
 *     retryIf: (error) => !(error instanceof BadRequestError),
 *   },
 * });
 * ```
 */
export interface RetryOptions {
  /** Attempts in all, the first included: an integer >= 1. Default 1 (no retry). */
  attempts?: number;
  /** Wait between attempts. Default: none (`{ type: 'fixed', delay: 0 }`). */
  backoff?: Backoff;
  /** Return false to fail the job at once instead of retrying. `attempt` is the one that failed. */
  retryIf?: (error: unknown, attempt: number) => boolean;
}
