/** Arrays of up to this many slots are kept as they are: too small to be worth a copy. */
const SHRINK_MIN = 64;

/**
 * A binary min-heap ordered by a strict "less than" function. Callers that need stable order
 * put a sequence number in the comparison, so equal keys come out in insertion order.
 *
 * @internal
 */
export class Heap<T> {
  #items: T[] = [];
  readonly #less: (a: T, b: T) => boolean;
  /**
   * The most items held since the array was last made: about its capacity, which `pop` never
   * gives back by itself (a drained million-job heap kept ~10 MB).
   */
  #peak = 0;

  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  /** Number of items held. */
  get length(): number {
    return this.#items.length;
  }

  /** The smallest item without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** Adds an item: O(log n). */
  push(item: T): void {
    const items = this.#items;
    const less = this.#less;
    let i = items.length;
    items.push(item);
    if (i >= this.#peak) this.#peak = i + 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const up = items[parent] as T;
      if (!less(item, up)) break;
      items[i] = up;
      i = parent;
    }
    items[i] = item;
  }

  /** Removes and returns the smallest item, or `undefined` when empty: O(log n). */
  pop(): T | undefined {
    const items = this.#items;
    if (items.length === 0) return undefined;
    const top = items[0] as T;
    const last = items.pop() as T;
    const n = items.length;
    if (n > 0) this.#siftDown(last, 0);
    if (n <= this.#peak >> 2 && this.#peak > SHRINK_MIN) this.#shrink();
    return top;
  }

  /** Keeps only the items for which `keep` returns true, then restores heap order: O(n). */
  filterInPlace(keep: (item: T) => boolean): void {
    this.#items = this.#items.filter(keep);
    this.#peak = this.#items.length;
    for (let i = (this.#items.length >> 1) - 1; i >= 0; i--) this.#siftDown(this.#items[i] as T, i);
  }

  /** Every item, in no particular order. */
  values(): readonly T[] {
    return this.#items;
  }

  /** Removes every item. */
  clear(): void {
    this.#items = [];
    this.#peak = 0;
  }

  /**
   * Swaps the array for one sized to what is held, once that is a quarter of the peak or less:
   * the copy costs O(n) against the 3n or more pops since the peak, so O(1) amortised, and a
   * drained heap holds no more than {@link SHRINK_MIN} slots.
   */
  #shrink(): void {
    this.#items = this.#items.length === 0 ? [] : this.#items.slice();
    this.#peak = this.#items.length;
  }

  #siftDown(item: T, i: number): void {
    const items = this.#items;
    const less = this.#less;
    const n = items.length;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && less(items[right] as T, items[child] as T)) child = right;
      const down = items[child] as T;
      if (!less(down, item)) break;
      items[i] = down;
      i = child;
    }
    items[i] = item;
  }
}
