import { mayRetry, retryDelay } from '../core/retry-decision.js';
import * as check from '../internal/validate.js';
import type { CoreJob } from '../core/job-record.js';
import type { RetryOptions } from '../api/retry.js';

const RETRY_KEYS = new Set(['attempts', 'backoff', 'retryIf']);
const BACKOFF_KEYS = new Set(['type', 'delay', 'maxDelay', 'jitter']);

/** Validates a retry option; `where` names it in errors (`worker option "retry"`). @internal */
export function checkRetryOptions(where: string, retry: unknown): void {
  check.optionsObject(where, retry);
  if (retry === undefined) return;
  const options = retry as RetryOptions;
  for (const key of Object.keys(options)) {
    if (!RETRY_KEYS.has(key)) throw new TypeError(`qmux: unknown field "${key}" in ${where}; allowed: ${[...RETRY_KEYS].join(', ')}`);
  }
  if (options.attempts !== undefined) check.positiveInt(`${where} "attempts"`, options.attempts);
  if (options.retryIf !== undefined && typeof options.retryIf !== 'function') {
    throw new TypeError(`qmux: ${where} "retryIf" must be a function (error, attempt) => boolean, got ${check.describeValue(options.retryIf)}`);
  }
  const backoff = options.backoff;
  if (backoff === undefined || typeof backoff === 'function') return;
  check.optionsObject(`${where} "backoff"`, backoff);
  if (backoff === null || typeof backoff !== 'object') {
    throw new TypeError(`qmux: ${where} "backoff" must be { type, delay, maxDelay?, jitter? } or a function (attempt, error) => ms`);
  }
  for (const key of Object.keys(backoff)) {
    if (!BACKOFF_KEYS.has(key)) throw new TypeError(`qmux: unknown field "${key}" in ${where} "backoff"; allowed: ${[...BACKOFF_KEYS].join(', ')}`);
  }
  if (backoff.type !== 'fixed' && backoff.type !== 'exponential') {
    throw new TypeError(`qmux: ${where} "backoff.type" must be 'fixed' or 'exponential', got ${check.describeValue(backoff.type)}`);
  }
  check.nonNegativeMs(`${where} "backoff.delay"`, backoff.delay);
  if (backoff.maxDelay !== undefined) check.nonNegativeMs(`${where} "backoff.maxDelay"`, backoff.maxDelay);
  if (backoff.jitter !== undefined) {
    if (typeof backoff.jitter !== 'number' || !(backoff.jitter >= 0 && backoff.jitter <= 1)) {
      throw new RangeError(`qmux: ${where} "backoff.jitter" must be a number in [0, 1], got ${check.describeValue(backoff.jitter)}`);
    }
  }
}

/**
 * Checks what a `backoff` function returned: a finite number of ms >= 0, else a `TypeError`
 * naming it (the caller then fails the job instead of retrying).
 *
 * @internal
 */
export function checkBackoffResult(ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new TypeError(`qmux: retry "backoff" function must return a finite number of ms >= 0, got ${check.describeValue(ms)}`);
  }
  return ms;
}

/** The worker's policy with a job's fields laid over it. @internal */
export function mergeRetry(worker: RetryOptions | undefined, job: RetryOptions | undefined): RetryOptions | undefined {
  if (job === undefined) return worker;
  if (worker === undefined) return job;
  // Field by field: a field the job leaves undefined keeps the worker's.
  const merged: RetryOptions = { ...worker };
  if (job.attempts !== undefined) merged.attempts = job.attempts;
  if (job.backoff !== undefined) merged.backoff = job.backoff;
  if (job.retryIf !== undefined) merged.retryIf = job.retryIf;
  return merged;
}

/**
 * Runs the user's retry hooks (`retryIf`, a backoff function) for `job`'s failed attempt, then
 * returns the core's pure verdict: the wait before the next attempt, or -1 to fail for good
 * (out of attempts, `retryIf` said no, or a hook threw, which goes to `onFault`). User code,
 * so the shell calls it before the transition, never inside one.
 *
 * @internal
 */
export function askRetryHooks(worker: RetryOptions | undefined, job: CoreJob, error: unknown, onFault: (error: unknown) => void): number {
  const ext = job.ext;
  const policy = mergeRetry(worker, ext?.retry as RetryOptions | undefined);
  const transferred = ext?.transfer !== undefined && ext.transfer.length > 0;
  if (!mayRetry(policy, job.attempts, transferred)) return -1;
  try {
    const retry = policy.retryIf === undefined || Boolean(policy.retryIf(error, job.attempts));
    const backoff = policy.backoff;
    const backoffMs = retry && typeof backoff === 'function' ? checkBackoffResult(backoff(job.attempts, error)) : undefined;
    return retryDelay(policy, job.attempts, transferred, { retry, backoffMs }, Math.random());
  } catch (hookError) {
    onFault(hookError);
    return -1;
  }
}
