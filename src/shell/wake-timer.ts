import type { Clock } from './clock.js';
import { MAX_TIMER_MS } from '../internal/validate.js';
import { inRootContext } from './async-context.js';

/**
 * The one timer of a worker, armed for the core's next deadline (SPEC 12). It keeps the
 * earliest request: asked for a later time while armed for an earlier one, it stays as it is
 * (when it fires, the pass re-arms for the rest).
 *
 * @internal
 */
export class WakeTimer {
  readonly #onFire: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #at = Infinity;

  constructor(onFire: () => void) {
    this.#onFire = () => {
      this.#timer = undefined;
      this.#at = Infinity;
      onFire();
    };
  }

  /**
   * Arms for `at` (`Infinity`: disarms), on `clock`. The clock is read only when the timer is
   * set: a worker holding a delayed job re-arms after every pass, for the same time.
   */
  readonly #armFor = (wait: number): ReturnType<typeof setTimeout> => setTimeout(this.#onFire, wait);

  arm(at: number, clock: Clock): void {
    if (at === Infinity) {
      this.disarm();
      return;
    }
    if (this.#timer !== undefined) {
      if (this.#at <= at) return;
      clearTimeout(this.#timer);
    }
    const now = clock.now();
    // A due time further away than a timer can wait (runAt next year) is reached in steps: the
    // timer fires early, the pass finds nothing due and arms the next step. Whole milliseconds,
    // rounded up, so that the timer never fires before the deadline it is for.
    const wait = Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(at - now)));
    this.#at = now + wait;
    // Armed outside any job's context (SPEC 13): it may be armed while a job's handler or
    // events run, and must neither keep that context alive nor run the next pass in it.
    this.#timer = inRootContext(this.#armFor, wait);
  }

  disarm(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
  }
}
