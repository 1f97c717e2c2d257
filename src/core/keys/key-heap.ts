import type { KeyState } from './key-state.js';

/**
 * A binary min-heap of keys by a number read when a key is pushed (its virtual start or finish,
 * or a time), then by activation order, that knows where each key sits (`KeyState.heapIndex`), so
 * a key can leave it from anywhere in O(log k). A key is in at most one such heap at a time, and
 * its number does not change while it is in one.
 *
 * The numbers live in typed arrays beside the keys: a comparison reads two slots of an array
 * instead of two keys and their boxed doubles, which at 100,000 keys was most of the cost of a
 * weighted pick (each key a cache miss).
 *
 * @internal
 */
export class KeyHeap {
  #items: KeyState[] = [];
  #values = new Float64Array(16);
  #orders = new Float64Array(16);
  readonly #rank: (key: KeyState) => number;

  constructor(rank: (key: KeyState) => number) {
    this.#rank = rank;
  }

  get length(): number {
    return this.#items.length;
  }

  peek(): KeyState | undefined {
    return this.#items[0];
  }

  push(key: KeyState): void {
    const at = this.#items.length;
    if (at === this.#values.length) this.#grow();
    this.#items.push(key);
    this.#values[at] = this.#rank(key);
    this.#orders[at] = key.order;
    this.#up(at);
  }

  pop(): KeyState | undefined {
    const top = this.#items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  remove(key: KeyState): void {
    const items = this.#items;
    const at = key.heapIndex;
    key.heapIndex = -1;
    const lastAt = items.length - 1;
    const last = items.pop() as KeyState;
    if (at === lastAt) return;
    items[at] = last;
    this.#values[at] = this.#values[lastAt] as number;
    this.#orders[at] = this.#orders[lastAt] as number;
    this.#up(at);
    this.#down(last.heapIndex);
  }

  #grow(): void {
    const values = new Float64Array(this.#values.length * 2);
    values.set(this.#values);
    this.#values = values;
    const orders = new Float64Array(this.#orders.length * 2);
    orders.set(this.#orders);
    this.#orders = orders;
  }

  #up(at: number): void {
    const items = this.#items;
    const values = this.#values;
    const orders = this.#orders;
    const key = items[at] as KeyState;
    const value = values[at] as number;
    const order = orders[at] as number;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parentValue = values[parentAt] as number;
      if (!(value < parentValue || (value === parentValue && order < (orders[parentAt] as number)))) break;
      const parent = items[parentAt] as KeyState;
      items[at] = parent;
      values[at] = parentValue;
      orders[at] = orders[parentAt] as number;
      parent.heapIndex = at;
      at = parentAt;
    }
    items[at] = key;
    values[at] = value;
    orders[at] = order;
    key.heapIndex = at;
  }

  #down(at: number): void {
    const items = this.#items;
    const values = this.#values;
    const orders = this.#orders;
    const n = items.length;
    const key = items[at] as KeyState;
    const value = values[at] as number;
    const order = orders[at] as number;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n) {
        const rv = values[right] as number;
        const lv = values[left] as number;
        if (rv < lv || (rv === lv && (orders[right] as number) < (orders[left] as number))) child = right;
      }
      const childValue = values[child] as number;
      if (!(childValue < value || (childValue === value && (orders[child] as number) < order))) break;
      const smaller = items[child] as KeyState;
      items[at] = smaller;
      values[at] = childValue;
      orders[at] = orders[child] as number;
      smaller.heapIndex = at;
      at = child;
    }
    items[at] = key;
    values[at] = value;
    orders[at] = order;
    key.heapIndex = at;
  }
}
