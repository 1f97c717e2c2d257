import type { Deadline } from './job-record.js';
import { KeyedHeap } from './due/heap.js';

/**
 * Job timeouts as data (quinn-proto's timer table): an indexed min-heap of the running attempts'
 * deadlines (a tracked {@link KeyedHeap} by time). The earliest is folded into the core's one
 * `wakeAt`; an attempt that settles first leaves the heap in O(log n), so nothing (no tombstone,
 * no job) is left behind.
 *
 * @internal
 */
export class Deadlines {
  readonly #heap = new KeyedHeap<Deadline>({ tracked: true });

  get length(): number {
    return this.#heap.length;
  }

  /** The earliest deadline, or `Infinity`. */
  nextAt(): number {
    return this.#heap.peekKey();
  }

  /** The earliest deadline if it has passed at `now`, without removing it. */
  expired(now: number): Deadline | undefined {
    return this.#heap.peekKey() <= now ? this.#heap.peek() : undefined;
  }

  add(deadline: Deadline): void {
    // Equal times keep no order among themselves, as before the heap was shared: the second key is 0.
    this.#heap.push(deadline, deadline.at, 0);
  }

  remove(deadline: Deadline): void {
    const at = deadline.heapAt;
    if (at < 1) return;
    deadline.heapAt = -1;
    this.#heap.removeAt(at); // the heap gives a drained peak's capacity back by itself
  }
}
