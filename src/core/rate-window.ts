import { ChunkedQueue } from './due/chunked-queue.js';

/**
 * A sliding-window rate limit: at most `limit` starts in any window of `interval` ms.
 *
 * It keeps the times of the last `limit` starts. A start is allowed when fewer than `limit` are
 * remembered or the oldest of them is at least `interval` ms old. This is exact (no bucket edges
 * that let 2x the limit through) and costs O(1) per start. Time is passed in, never read.
 *
 * @internal
 */
export class RateWindow {
  readonly limit: number;
  readonly interval: number;
  readonly #starts = new ChunkedQueue<number>();
  /** The time of the last start recorded, or `-Infinity`: when the newest window began (for checks). */
  latest = Number.NEGATIVE_INFINITY;

  constructor(limit: number, interval: number) {
    this.limit = limit;
    this.interval = interval;
  }

  /** Whether a start at `now` stays within the limit. */
  allows(now: number): boolean {
    return this.#starts.length < this.limit || now - (this.#starts.peek() as number) >= this.interval;
  }

  /** Records a start at `now`; call only when {@link allows} said yes. */
  record(now: number): void {
    if (this.#starts.length === this.limit) this.#starts.shift();
    this.#starts.push(now);
    this.latest = now;
  }

  /** The earliest time at which a start is allowed again (`now` or earlier when allowed now). */
  openAt(): number {
    return this.#starts.length < this.limit ? -Infinity : (this.#starts.peek() as number) + this.interval;
  }
}
