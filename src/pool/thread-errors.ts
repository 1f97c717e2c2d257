import { QmuxError } from '../api/errors.js';
import { safeString } from '../api/describe.js';
import { THREW_NULL } from './threw-null.js';

/**
 * A worker thread ended by itself (a handler called `process.exit()`, say, or left a timer
 * that did). The job it ran fails with this error and the thread is replaced; a thread that
 * ran no job, or was still starting, is reported as the worker's `'error'` (or fails the jobs
 * waiting for it as the `cause` of a {@link ThreadStartError}).
 */
export class ThreadExitError extends QmuxError {
  /** The thread's exit code. */
  readonly exitCode: number;
  /**
   * @param exitCode - the exit code the thread ended with
   * @param during - what the thread was doing, as far as the pool knows: running a job
   *   (`'job'`, the default), still starting (`'start'`), or not known to run one (`'unknown'`:
   *   idle, or about to begin a task it had not said it runs)
   */
  constructor(exitCode: number, during: 'job' | 'start' | 'unknown' = 'job') {
    super(
      during === 'job'
        ? `qmux: the worker thread running this job exited with code ${exitCode}`
        : `qmux: a worker thread exited with code ${exitCode}${during === 'start' ? ' while it was starting' : ''}`,
    );
    this.exitCode = exitCode;
  }
}

/**
 * The worker thread that was to run this job died before it was ready to run anything: a host
 * `--import` preload that throws in worker threads, say, or `resourceLimits` too small for a thread
 * to boot. The job fails with this error (`cause` is what the thread reported); no thread is
 * started again for it, but the next job tries a new one.
 */
export class ThreadStartError extends QmuxError {
  /** @param cause - what the thread reported as it died (its error, or its exit) */
  constructor(cause: unknown) {
    super(`qmux: the worker thread for this job could not start: ${describeCause(cause)}`, { cause });
  }
}

/** `Name: message` of an Error (with its code, if any), else the value as JSON. */
function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return describe(cause);
  const code = (cause as { code?: unknown }).code;
  return `${cause.name}${typeof code === 'string' ? ` [${code}]` : ''}: ${cause.message}`;
}

/**
 * Errors that jobs failed with because their thread died of an uncaught exception (a throw in a
 * timer of the handler, say). The error is the exception itself, so nothing else tells it from
 * a handler's plain throw, which does not end the thread. See `ThreadPool#threadFailed`.
 */
const uncaughtDeaths = new WeakSet<object>();

/**
 * Whether a job's error means its thread died (exit, out of memory, an uncaught exception, or
 * while starting), as opposed to a throw. @internal
 */
export function isThreadCrash(error: unknown): boolean {
  return (
    error instanceof ThreadExitError ||
    error instanceof ThreadStartError ||
    (typeof error === 'object' && error !== null && ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY' || uncaughtDeaths.has(error)))
  );
}

/**
 * Marks `failure`, what a job failed with because its thread died by itself, as a crash (see
 * {@link isThreadCrash}): needed when the failure is the uncaught exception that killed the thread.
 *
 * @internal
 */
export function noteThreadCrash(failure: object): void {
  uncaughtDeaths.add(failure);
}

/**
 * A failure that crossed from a thread as something other than an Error (Node passes an
 * uncloneable result's DataCloneError as a bare object) becomes an Error that says so.
 */
export function asError(error: unknown): Error {
  if (error instanceof Error) return error;
  const threwNull = typeof error === 'object' && error !== null && (error as Record<string, unknown>)[THREW_NULL] === true;
  return new ThreadTaskError(threwNull ? null : error);
}

/**
 * Whether `error`, what killed a thread, is an uncaught exception that Node could not pass to the
 * main thread intact: Node 20 passes one that is not a plain `Error` (the `DataCloneError` of a
 * result that cannot be cloned, a `DOMException`) as a bare `{}`, which `asError` handles; Node 22+
 * passes it as an `Error` with an empty message and no other field, whose stack still names it
 * (`DataCloneError: () => 1 could not be cloned.`). A handler's own `Error`, even with an empty
 * message, crosses intact: its stack starts with its name.
 */
export function lostInTransit(error: object): boolean {
  if (!(error instanceof Error) || error.message !== '' || Object.getPrototypeOf(error) !== Error.prototype) return false;
  const firstLine = (error.stack ?? '').split('\n', 1)[0] as string;
  return firstLine !== 'Error' && !firstLine.startsWith('Error:');
}

/**
 * A thread reported a failure that is not an `Error`, typically because the job's result could
 * not be structured-cloned back to the main thread.
 */
export class ThreadTaskError extends QmuxError {
  /** What the thread reported. */
  readonly reported: unknown;
  /**
   * @param reported - what the thread failed the job with, in place of an `Error` (`{}` for a
   *   result that could not be cloned)
   * @param options - `cause`: on Node 22+, the `Error` Node passed for a result that could not be
   *   cloned (its `stack` names the `DataCloneError`)
   */
  constructor(reported: unknown, options?: ErrorOptions) {
    super(
      `qmux: the worker thread failed the job with a non-Error value (${describe(reported)}); ` +
        'a thrown value that is not an Error, or a result that cannot be structured-cloned, arrives like this',
      options,
    );
    this.reported = reported;
  }
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? safeString(value);
  } catch {
    return safeString(value);
  }
}
