import type { JobRecord } from '../handles/job.js';
import { UNTIMED } from '../core/job-record.js';

/**
 * Awaits the promise of one running job's handler: holds the callbacks given to its `then`.
 * Awaiters are reused, so a job whose handler returns a promise costs no closure of its own.
 *
 * @internal
 */
export class Awaiter {
  job: JobRecord | undefined = undefined;
  /** Its place in the worker's list of every awaiter (see `Runner.#awaiters`). */
  at = -1;
  /** When the job's attempt started, if the job is sampled (see `isSampled`), or `UNTIMED`: its run time is measured from here. */
  startedAt = UNTIMED;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  constructor(done: (awaiter: Awaiter, ok: boolean, value: unknown) => void) {
    this.resolve = (value) => done(this, true, value);
    this.reject = (error) => done(this, false, error);
  }

  /**
   * Awaits `result` for `job` exactly as `await result` would: Promise.resolve keeps a plain
   * native promise and adopts anything else (a subclass, a hand-written thenable) into one, and
   * the native then ignores any `then` of its own. A native promise settles once, so the
   * callbacks of a reused awaiter are called at most once, whatever the handler returned.
   */
  await(job: JobRecord, result: PromiseLike<unknown>): void {
    this.job = job;
    nativeThen.call(Promise.resolve(result), this.resolve, this.reject);
  }
}

const nativeThen = Promise.prototype.then;

/**
 * Whether a handler's result must be awaited: a promise, or anything with a callable `then`
 * (a `then` getter that throws fails the job: the caller catches).
 *
 * @internal
 */
export function isAwaitable(value: unknown): value is PromiseLike<unknown> {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  return value instanceof Promise || typeof (value as PromiseLike<unknown>).then === 'function';
}
