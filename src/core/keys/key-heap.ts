import type { KeyState } from './key-state.js';

/**
 * A binary min-heap of keys by a number read when a key is pushed (its virtual start or finish,
 * or a time), then by activation order. A key is in at most one such heap at a time, and its
 * number does not change while it is in one.
 *
 * Keys leave it lazily: {@link remove} of a key that is not on top only marks its entry stale (the
 * key's `heapToken` moves on), and stale entries are dropped as they reach the top, or all at
 * once when they come to outnumber the live ones. So moving entries never writes to a key, and
 * the numbers live in typed arrays beside the keys: a sift reads and writes arrays only, where a
 * heap that kept each key's position wrote into every key it moved (at 100,000 keys, each one a
 * cache miss).
 *
 * @internal
 */
export class KeyHeap {
  #items: KeyState[] = [];
  #values = new Float64Array(16);
  #orders = new Float64Array(16);
  /** The `heapToken` of each entry's key when it was pushed: the entry is live while they match. */
  #tokens = new Float64Array(16);
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
    const items = this.#items;
    while (items.length > 0 && this.#tokens[0] !== (items[0] as KeyState).heapToken) this.#popTop();
    return items[0];
  }

  push(key: KeyState): void {
    const at = this.#items.length;
    if (at === this.#values.length) this.#grow();
    const token = ++key.heapToken;
    this.#items.push(key);
    this.#values[at] = this.#rank(key);
    this.#orders[at] = key.order;
    this.#tokens[at] = token;
    this.#live++;
    this.#up(at);
  }

  /** Takes `key` out; it must be in this heap. */
  remove(key: KeyState): void {
    this.#live--;
    const onTop = this.#items[0] === key && this.#tokens[0] === key.heapToken;
    key.heapToken++; // its entry, wherever it is, is stale from now on
    if (onTop) this.#popTop();
    else if (this.#items.length > 2 * this.#live + 32) this.#compact();
  }

  /** Calls `visit` on every key held (in no particular order). */
  forEach(visit: (key: KeyState) => void): void {
    const items = this.#items;
    for (let at = 0; at < items.length; at++) {
      const key = items[at] as KeyState;
      if (this.#tokens[at] === key.heapToken) visit(key);
    }
  }

  /**
   * Maps every entry's number through `to`, as its key's own number is mapped (see
   * `WeightedTurns`), then puts the entries in heap order again: `to` never reverses an order,
   * but it may make two numbers equal, and their activation order then decides. O(n), and it
   * drops the stale entries.
   */
  renumberAll(to: (value: number) => number): void {
    const values = this.#values;
    for (let at = 0; at < this.#items.length; at++) values[at] = to(values[at] as number);
    this.#compact();
  }

  #grow(): void {
    const size = this.#values.length * 2;
    this.#values = grown(this.#values, size);
    this.#orders = grown(this.#orders, size);
    this.#tokens = grown(this.#tokens, size);
  }

  /** Drops the top entry. */
  #popTop(): void {
    const items = this.#items;
    const lastAt = items.length - 1;
    const last = items.pop() as KeyState;
    if (lastAt === 0) return;
    items[0] = last;
    this.#values[0] = this.#values[lastAt] as number;
    this.#orders[0] = this.#orders[lastAt] as number;
    this.#tokens[0] = this.#tokens[lastAt] as number;
    this.#down(0);
  }

  /** Drops every stale entry and restores the heap order: O(n), once stale entries outnumber live ones. */
  #compact(): void {
    const items = this.#items;
    let kept = 0;
    for (let at = 0; at < items.length; at++) {
      const key = items[at] as KeyState;
      if (this.#tokens[at] !== key.heapToken) continue;
      items[kept] = key;
      this.#values[kept] = this.#values[at] as number;
      this.#orders[kept] = this.#orders[at] as number;
      this.#tokens[kept] = this.#tokens[at] as number;
      kept++;
    }
    items.length = kept;
    for (let at = (kept >> 1) - 1; at >= 0; at--) this.#down(at);
  }

  #up(at: number): void {
    const items = this.#items;
    const values = this.#values;
    const orders = this.#orders;
    const tokens = this.#tokens;
    const key = items[at] as KeyState;
    const value = values[at] as number;
    const order = orders[at] as number;
    const token = tokens[at] as number;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parentValue = values[parentAt] as number;
      if (!(value < parentValue || (value === parentValue && order < (orders[parentAt] as number)))) break;
      items[at] = items[parentAt] as KeyState;
      values[at] = parentValue;
      orders[at] = orders[parentAt] as number;
      tokens[at] = tokens[parentAt] as number;
      at = parentAt;
    }
    items[at] = key;
    values[at] = value;
    orders[at] = order;
    tokens[at] = token;
  }

  #down(at: number): void {
    const items = this.#items;
    const values = this.#values;
    const orders = this.#orders;
    const tokens = this.#tokens;
    const n = items.length;
    const key = items[at] as KeyState;
    const value = values[at] as number;
    const order = orders[at] as number;
    const token = tokens[at] as number;
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
      items[at] = items[child] as KeyState;
      values[at] = childValue;
      orders[at] = orders[child] as number;
      tokens[at] = tokens[child] as number;
      at = child;
    }
    items[at] = key;
    values[at] = value;
    orders[at] = order;
    tokens[at] = token;
  }
}

function grown(array: Float64Array<ArrayBuffer>, size: number): Float64Array<ArrayBuffer> {
  const bigger = new Float64Array(size);
  bigger.set(array);
  return bigger;
}
