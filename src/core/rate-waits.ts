import { KeyedHeap } from './due/heap.js';
import type { Lane } from './lane.js';

/**
 * Sources that would be eligible but for their rate window, by the time it opens: a binary
 * min-heap with the times in a typed array (a {@link KeyedHeap}). Entries are not removed when a source changes: one
 * is live while `source.rateOpensAt` equals its time, and a stale one is dropped when it comes
 * out. A source has at most one live entry.
 *
 * @internal
 */
export class RateWaits {
  /** Sources by time; equal times keep no order among themselves (the second key is 0). */
  readonly #heap = new KeyedHeap<Lane>();

  get length(): number {
    return this.#heap.length;
  }

  /** The earliest opening time waited for, or `Infinity`. */
  nextAt(): number {
    return this.#heap.peekKey();
  }

  /** `source` waits for its rate window to open at `at`. */
  wait(source: Lane, at: number): void {
    source.rateOpensAt = at;
    this.#heap.push(source, at, 0);
  }

  /** Takes out the earliest entry if it is due at `now` and live; returns its source, or `undefined` when none is due. */
  popDue(now: number): Lane | null | undefined {
    const at = this.#heap.peekKey();
    if (at > now) return undefined;
    const top = this.#heap.pop() as Lane;
    if (top.rateOpensAt !== at) return null; // stale: the source changed since
    top.rateOpensAt = Number.NaN;
    return top;
  }
}
