/**
 * A job that failed its last attempt, as kept in `worker.deadLetters`.
 *
 * @typeParam T - job data
 */
export interface DeadLetter<T = unknown> {
  /** The job's id. */
  readonly id: string;
  /** Its data. */
  readonly data: T;
  /** Name of the source it came from. */
  readonly source: string;
  /** The error of its last attempt. */
  readonly error: unknown;
  /** Attempts it made. */
  readonly attempts: number;
  /** When it failed for good. */
  readonly failedAt: Date;
  /** Its key, for a job of a queue bound with `keys` (`redrive` keeps it). */
  readonly key?: string;
}
