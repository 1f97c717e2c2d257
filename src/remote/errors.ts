import { QmuxError } from '../api/errors.js';
import { messageOf } from '../api/describe.js';

/**
 * What a remote adapter rejects with when the engine says the job's claim (its lock) is gone:
 * it expired, or another consumer holds it now. The worker then stops trying to record that
 * job's outcome (someone else will run it) and counts the lost lock.
 *
 * @example
 * ```ts
 * async complete(job, result) {
 *   if (!(await engine.ack(job.id, job.lease, result))) throw new LockLostError(job.id, 'complete');
 * }
 * ```
 */
export class LockLostError extends QmuxError {
  /** The remote job's id. */
  readonly jobId: string;
  /**
   * @param jobId - the remote job's id
   * @param call - the adapter call that found the lock gone (`'complete'`, `'fail'`...)
   */
  constructor(jobId: string, call: string, options?: ErrorOptions) {
    super(`qmux: the claim on remote job ${jobId} was lost before ${call}; another consumer may run it`, options);
    this.jobId = jobId;
  }
}

/**
 * Whether `error` says the claim is gone: a {@link LockLostError}, or one of that name (from an
 * adapter built on another copy of qmux).
 *
 * @internal
 */
export function isLockLost(error: unknown): boolean {
  return error instanceof LockLostError || (error instanceof Error && error.name === 'LockLostError');
}

/**
 * A remote source cannot reach its engine (a call failed or the connection dropped): reported
 * once per outage on the worker's `error` event (or as a `QmuxWarning`), with the first failure
 * as `cause`; `worker.health()` is `degraded` until the engine answers again.
 */
export class RemoteSourceError extends QmuxError {
  /** The remote source's name. */
  readonly source: string;
  /**
   * @param source - the remote source's name
   * @param what - what failed, in words
   * @param cause - the engine's or adapter's error
   */
  constructor(source: string, what: string, cause: unknown) {
    super(`qmux: remote source "${source}" ${what}: ${messageOf(cause)}`, { cause });
    this.source = source;
  }
}

/**
 * The claims on remote jobs that a source lost during one outage (or, outside an outage, one at
 * a time): those jobs go back to their engine, and another consumer may run them again.
 * Reported on the worker's `error` event (or as a `QmuxWarning`).
 */
export class LostLocksError extends QmuxError {
  /** The remote source's name. */
  readonly source: string;
  /** How many claims were lost. */
  readonly lost: number;
  /**
   * @param source - the remote source's name
   * @param lost - how many claims were lost
   */
  constructor(source: string, lost: number) {
    super(
      `qmux: remote source "${source}" lost the claim on ${lost} job${lost === 1 ? '' : 's'}; another consumer may run ${lost === 1 ? 'it' : 'them'} again`,
    );
    this.source = source;
    this.lost = lost;
  }
}
