import type { BackoffSchedule, RetryOptions } from '../api/retry.js';

/**
 * What the user's retry hooks said about one failed attempt. The shell calls them (they are
 * user code) before the transition and hands their answer in, so the decision itself is pure.
 *
 * @internal
 */
export interface RetryAnswer {
  /** What `retryIf(error, attempt)` returned; true when there is no `retryIf`. */
  retry: boolean;
  /** What a `backoff` function returned (checked), or `undefined` for a schedule or no backoff. */
  backoffMs: number | undefined;
}

/**
 * Whether a failed attempt is worth asking the hooks about at all: the policy allows another
 * attempt, and the job's buffers were not moved into a thread (a retry would see them empty).
 *
 * @internal
 */
export function mayRetry(policy: RetryOptions | undefined, attempt: number, transferred: boolean): policy is RetryOptions {
  return policy !== undefined && attempt < (policy.attempts ?? 1) && !transferred;
}

/**
 * The wait before retrying after attempt `attempt` failed, or -1 to fail the job for good: a
 * pure function of the policy, the attempt, the hooks' answer and a random number in [0, 1)
 * (for jitter) that the shell supplies.
 *
 * @internal
 */
export function retryDelay(policy: RetryOptions | undefined, attempt: number, transferred: boolean, answer: RetryAnswer, random: number): number {
  if (!mayRetry(policy, attempt, transferred) || !answer.retry) return -1;
  const backoff = policy.backoff;
  if (backoff === undefined) return 0;
  if (typeof backoff === 'function') return answer.backoffMs ?? 0;
  return scheduledDelay(backoff, attempt, random);
}

/** `delay` (fixed) or `delay * 2^(attempt - 1)` (exponential), capped at `maxDelay`, times the jitter factor. @internal */
export function scheduledDelay(backoff: BackoffSchedule, attempt: number, random: number): number {
  let ms = backoff.type === 'fixed' ? backoff.delay : backoff.delay * 2 ** (attempt - 1);
  if (backoff.maxDelay !== undefined && ms > backoff.maxDelay) ms = backoff.maxDelay;
  if (backoff.jitter !== undefined && backoff.jitter > 0) ms *= 1 - backoff.jitter * random;
  return ms;
}
