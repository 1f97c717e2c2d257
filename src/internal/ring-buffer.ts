/**
 * A growable FIFO ring buffer: O(1) push, shift and length, no per-item allocation.
 *
 * `Array.prototype.shift` is O(n) on large arrays, and a linked list allocates a node per item;
 * a power-of-two ring that doubles when full does neither.
 *
 * @internal
 */
export class RingBuffer<T> {
  #items: (T | undefined)[];
  #mask: number;
  #head = 0;
  #length = 0;

  constructor(initialCapacity = 16) {
    let capacity = 4;
    while (capacity < initialCapacity) capacity *= 2;
    this.#items = new Array<T | undefined>(capacity);
    this.#mask = capacity - 1;
  }

  /** Number of items held. */
  get length(): number {
    return this.#length;
  }

  /** Appends an item at the tail. */
  push(item: T): void {
    if (this.#length > this.#mask) this.#grow();
    this.#items[(this.#head + this.#length) & this.#mask] = item;
    this.#length++;
  }

  /** Removes and returns the head, or `undefined` when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined; // let the item be collected
    this.#head = (this.#head + 1) & this.#mask;
    this.#length--;
    return item;
  }

  /** The head without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    return this.#length === 0 ? undefined : this.#items[this.#head];
  }

  /** Item `i` places from the head (0 is the head); `undefined` past the end. */
  at(i: number): T | undefined {
    return i < this.#length ? this.#items[(this.#head + i) & this.#mask] : undefined;
  }

  /** Keeps only the items for which `keep` returns true, in order. */
  filterInPlace(keep: (item: T) => boolean): void {
    const kept: T[] = [];
    for (let i = 0; i < this.#length; i++) {
      const item = this.#items[(this.#head + i) & this.#mask] as T;
      if (keep(item)) kept.push(item);
    }
    this.clear();
    for (const item of kept) this.push(item);
  }

  /** Removes every item and shrinks back to a small buffer. */
  clear(): void {
    this.#items = new Array<T | undefined>(16);
    this.#mask = 15;
    this.#head = 0;
    this.#length = 0;
  }

  #grow(): void {
    const old = this.#items;
    const capacity = old.length * 2;
    const items = new Array<T | undefined>(capacity);
    for (let i = 0; i < this.#length; i++) items[i] = old[(this.#head + i) & this.#mask];
    this.#items = items;
    this.#mask = capacity - 1;
    this.#head = 0;
  }
}
