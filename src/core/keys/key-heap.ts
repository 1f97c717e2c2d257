import type { KeyState } from './key-state.js';

/**
 * A binary min-heap of keys that knows where each key sits (`KeyState.heapIndex`), so a key can
 * leave it from anywhere in O(log k). A key is in at most one such heap at a time.
 *
 * @internal
 */
export class KeyHeap {
  readonly #items: KeyState[] = [];
  readonly #less: (a: KeyState, b: KeyState) => boolean;

  constructor(less: (a: KeyState, b: KeyState) => boolean) {
    this.#less = less;
  }

  get length(): number {
    return this.#items.length;
  }

  peek(): KeyState | undefined {
    return this.#items[0];
  }

  push(key: KeyState): void {
    const items = this.#items;
    key.heapIndex = items.length;
    items.push(key);
    this.#up(key.heapIndex);
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
    const last = items.pop() as KeyState;
    if (last === key) return;
    items[at] = last;
    last.heapIndex = at;
    this.#up(at);
    this.#down(last.heapIndex);
  }

  #up(at: number): void {
    const items = this.#items;
    const key = items[at] as KeyState;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parent = items[parentAt] as KeyState;
      if (!this.#less(key, parent)) break;
      items[at] = parent;
      parent.heapIndex = at;
      at = parentAt;
    }
    items[at] = key;
    key.heapIndex = at;
  }

  #down(at: number): void {
    const items = this.#items;
    const n = items.length;
    const key = items[at] as KeyState;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.#less(items[right] as KeyState, items[left] as KeyState) ? right : left;
      const smaller = items[child] as KeyState;
      if (!this.#less(smaller, key)) break;
      items[at] = smaller;
      smaller.heapIndex = at;
      at = child;
    }
    items[at] = key;
    key.heapIndex = at;
  }
}
