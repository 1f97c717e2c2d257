/**
 * Where the worker reads the time. Every duration (delays, backoff, rate windows, timeouts,
 * the thread-crash window, stats ages) is measured on a monotonic clock, so a step of the wall
 * clock (NTP, a resumed VM) neither stalls nor hastens anything (SPEC 2, "Time").
 *
 * The core never reads a clock: the shell reads this one once per decision and passes `now`
 * down. Tests drive it virtually.
 *
 * @internal
 */
export interface Clock {
  /** Milliseconds on a monotonic scale with an arbitrary origin. */
  now(): number;
}

/** `performance.now()`: the production clock. @internal */
export const monotonicClock: Clock = { now: () => performance.now() };

/**
 * Converts a wall-clock instant (epoch ms, `runAt`) to the monotonic scale, once, at add: after a
 * later step of the wall clock the job runs when this converted time comes. `wallNow` must be
 * read before `now`: `Date.now()` is rounded down to the millisecond, so read after `now` across
 * a millisecond boundary it would put the job up to that gap before its `runAt`; read first, the
 * error only ever makes it later.
 *
 * @internal
 */
export function monotonicAt(epochMs: number, now: number, wallNow: number): number {
  return now + (epochMs - wallNow);
}
