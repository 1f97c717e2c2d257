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
