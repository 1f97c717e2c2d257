import type { Clock } from '../core/clock.js';

export type { Clock } from '../core/clock.js';

/** `performance.now()`: the production clock. @internal */
export const monotonicClock: Clock = { now: () => performance.now() };

/** How far below the kept wall-clock offset a reading may fall before it replaces it, ms (see {@link WallClockOffset}). @internal */
export const OFFSET_SLACK = 2;

/**
 * Converts wall-clock instants (epoch ms, `runAt`) to the monotonic scale, once, at add: after a
 * later step of the wall clock the job runs when this converted time comes.
 *
 * The offset between the two clocks is read at each add as `now - Date.now()`, the wall clock
 * read first: `Date.now()` is rounded down to the millisecond, so read after `now` across a
 * millisecond boundary it would put the job up to that gap before its `runAt`; read first, the
 * error only ever makes it later. The wall clock is read again after `now`, and the reading taken
 * again (up to twice, keeping the lowest) when it shows another millisecond: with both in one
 * millisecond, the reading is at most a millisecond above the true offset, though a garbage
 * collection came between the reads. What is left is the jitter of the millisecond rounded away, so the offset
 * is kept steady: the largest reading so far, taken again only when a reading falls more than
 * {@link OFFSET_SLACK} ms below it (the wall clock stepped or drifted forward). One `runAt` then
 * converts to one monotonic time across adds, so jobs given the same `runAt` stay in add order
 * (a jittered conversion could put a later add up to a millisecond before an earlier one), and
 * they arrive in the delayed jobs' sorted run, not their heap. A job never runs before its
 * `runAt`; it may run up to a millisecond after it (the rounding, as before), and up to
 * {@link OFFSET_SLACK} ms more after a forward step or drift of the wall clock smaller than that.
 *
 * @internal
 */
export class WallClockOffset {
  #offset = -Infinity;
  /** The monotonic time read by the last {@link at}. */
  now = 0;

  /** `epochMs` on the scale of `clock`; {@link now} is then the time read. */
  at(epochMs: number, clock: Clock): number {
    let read = Infinity;
    for (let tries = 0; tries < 3; tries++) {
      const wallNow = Date.now();
      this.now = clock.now();
      // Every reading is at least the true offset: the closest one is kept.
      read = Math.min(read, this.now - wallNow);
      if (Date.now() === wallNow) break;
    }
    if (read > this.#offset || read < this.#offset - OFFSET_SLACK) this.#offset = read;
    return epochMs + this.#offset;
  }
}
