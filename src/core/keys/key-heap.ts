import { KeyedHeap } from '../due/heap.js';
import type { KeyState } from './key-state.js';

/**
 * A binary min-heap of keys by a number read when a key is pushed (its virtual start or finish,
 * or a time), then by activation order. A key is in at most one such heap at a time, and its
 * number does not change while it is in one.
 *
 * Keys leave it lazily: {@link remove} of a key that is not on top only marks its entry stale (the
 * key's `heapToken` moves on), and stale entries are dropped as they reach the top, or all at
 * once when they come to outnumber the live ones. So moving entries never writes to a key, and
 * the numbers live in typed arrays beside the keys (a tagged {@link KeyedHeap}): a sift reads and writes arrays only, where a
 * heap that kept each key's position wrote into every key it moved (at 100,000 keys, each one a
 * cache miss).
 *
 * @internal
 */
export class KeyHeap {
  /** Keys by (number, activation order), each entry tagged with its key's `heapToken` when pushed: live while they match. */
  readonly #heap = new KeyedHeap<KeyState>({ tagged: true });
  #live = 0;
  readonly #rank: (key: KeyState) => number;

  constructor(rank: (key: KeyState) => number) {
    this.#rank = rank;
  }

  /** Keys held (stale entries not counted). */
  get length(): number {
    return this.#live;
  }

  /** The first key, or `undefined`. */
  peek(): KeyState | undefined {
    const heap = this.#heap;
    while (heap.length > 0 && heap.tagAt(1) !== heap.itemAt(1).heapToken) heap.pop();
    return heap.peek();
  }

  push(key: KeyState): void {
    this.#heap.push(key, this.#rank(key), key.order, ++key.heapToken);
    this.#live++;
  }

  /** Takes `key` out; it must be in this heap. */
  remove(key: KeyState): void {
    const heap = this.#heap;
    this.#live--;
    const onTop = heap.length > 0 && heap.itemAt(1) === key && heap.tagAt(1) === key.heapToken;
    key.heapToken++; // its entry, wherever it is, is stale from now on
    if (onTop) heap.pop();
    else if (heap.length > 2 * this.#live + 32) heap.filterInPlace(isLive);
  }

  /** Calls `visit` on every key held (in no particular order). */
  forEach(visit: (key: KeyState) => void): void {
    const heap = this.#heap;
    for (let at = 1; at <= heap.length; at++) {
      const key = heap.itemAt(at);
      if (heap.tagAt(at) === key.heapToken) visit(key);
    }
  }

  /**
   * Maps every entry's number through `to`, as its key's own number is mapped (see
   * `WeightedTurns`), then puts the entries in heap order again: `to` never reverses an order,
   * but it may make two numbers equal, and their activation order then decides. O(n), and it
   * drops the stale entries.
   */
  renumberAll(to: (value: number) => number): void {
    const heap = this.#heap;
    for (let at = 1; at <= heap.length; at++) heap.setKeysAt(at, to(heap.firstAt(at)), heap.secondAt(at));
    heap.filterInPlace(isLive);
  }
}

/** Whether an entry is live: its key's token has not moved on since it was pushed. */
function isLive(key: KeyState, token: number): boolean {
  return token === key.heapToken;
}
