/** Slots a {@link Heap} keeps in one flat array; the ones past it go to chunks. */
const FLAT = 1 << 18;
/** `log2` of {@link CHUNK}. */
const CHUNK_BITS = 14;
/**
 * Slots per chunk past {@link FLAT}: 128 KB of pointers, just past the largest ordinary object
 * of V8's heap, so that a chunk is a large object. A chunk is made at its full size: the
 * young generation then never copies it (a surviving large object changes generation in place),
 * where chunks grown by appends were copied through a dozen sizes and then, with their 8,192
 * pointers, by every scavenge they survived (7-10 ms pauses while a million due jobs were ordered).
 */
const CHUNK = 1 << CHUNK_BITS;
const SLOT = CHUNK - 1;
/** A {@link Heap}'s flat array of up to this many slots is kept as it is: too small to be worth a copy. */
const SHRINK_FLAT = 64;

/**
 * A binary min-heap ordered by a strict "less than" function. Callers that need stable order
 * put a sequence number in the comparison, so equal keys come out in insertion order.
 *
 * The first {@link FLAT} slots are one array; the slots past it are chunks of {@link CHUNK}, each
 * made at its full size and dropped once its first slot is popped. One flat array would have to be
 * copied into a bigger one as it grows, and at a million items that copy took 12-15 ms (a fresh
 * 8 MB array's pages are faulted in one by one): a stall in the middle of a burst of due jobs.
 * A heap that stays under {@link FLAT} sifts through the flat array alone, as one flat array
 * would (a push-then-pop loop at 16 to 100,000 items measured the same as before the chunks).
 *
 * @internal
 */
export class Heap<T> {
  #items: T[] = [];
  #spill: T[][] = [];
  #length = 0;
  readonly #less: (a: T, b: T) => boolean;
  /**
   * The most items the flat array held since it was last made: about its capacity, which `pop`
   * never gives back by itself.
   */
  #peak = 0;

  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  /** Number of items held. */
  get length(): number {
    return this.#length;
  }

  /** The smallest item without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** Adds an item: O(log n). */
  push(item: T): void {
    const less = this.#less;
    let i = this.#length++;
    if (i >= FLAT) {
      const k = i - FLAT;
      if ((k & SLOT) === 0) this.#spill.push(newChunk<T>());
      (this.#spill[k >>> CHUNK_BITS] as T[])[k & SLOT] = item;
      // Up through the chunks (the deepest levels) first, then the flat array as below.
      while (i >= FLAT) {
        const parent = (i - 1) >> 1;
        const up = this.#at(parent);
        if (!less(item, up)) {
          this.#put(i, item);
          return;
        }
        this.#put(i, up);
        i = parent;
      }
    } else {
      this.#items.push(item);
      if (i >= this.#peak) this.#peak = i + 1;
    }
    const items = this.#items;
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
    if (this.#length === 0) return undefined;
    const items = this.#items;
    const top = items[0] as T;
    const n = --this.#length;
    let last: T;
    if (n < FLAT) last = items.pop() as T;
    else {
      const spill = this.#spill;
      const k = n - FLAT;
      const tail = spill[k >>> CHUNK_BITS] as T[];
      last = tail[k & SLOT] as T;
      tail[k & SLOT] = undefined as T; // the chunk keeps no popped item alive
      if ((k & SLOT) === 0) spill.pop();
    }
    if (n > 0) this.#siftDown(last, 0);
    if (n <= this.#peak >> 2 && this.#peak > SHRINK_FLAT) this.#shrink();
    return top;
  }

  /** Keeps only the items for which `keep` returns true, then restores heap order: O(n). */
  filterInPlace(keep: (item: T) => boolean): void {
    const kept = this.values().filter(keep);
    this.#items = kept.slice(0, FLAT);
    this.#spill = [];
    for (let at = FLAT; at < kept.length; at += CHUNK) {
      const chunk = newChunk<T>();
      for (let i = at; i < kept.length && i < at + CHUNK; i++) chunk[i - at] = kept[i] as T;
      this.#spill.push(chunk);
    }
    this.#length = kept.length;
    this.#peak = this.#items.length;
    for (let i = (kept.length >> 1) - 1; i >= 0; i--) this.#siftDown(this.#at(i), i);
  }

  /** Every item, in no particular order: a new array. */
  values(): T[] {
    const all = this.#items.slice();
    for (let i = FLAT; i < this.#length; i++) all.push(this.#at(i));
    return all;
  }

  /** Removes every item. */
  clear(): void {
    this.#items = [];
    this.#spill = [];
    this.#length = 0;
    this.#peak = 0;
  }

  #at(i: number): T {
    if (i < FLAT) return this.#items[i] as T;
    const k = i - FLAT;
    return (this.#spill[k >>> CHUNK_BITS] as T[])[k & SLOT] as T;
  }

  #put(i: number, item: T): void {
    if (i < FLAT) this.#items[i] = item;
    else {
      const k = i - FLAT;
      (this.#spill[k >>> CHUNK_BITS] as T[])[k & SLOT] = item;
    }
  }

  /**
   * Swaps the flat array for one sized to what it holds, once that is a quarter of its peak or
   * less: the copy costs O(n) against the 3n or more pops since the peak, so O(1) amortised, and
   * a drained heap holds no more than {@link SHRINK_FLAT} slots. (Chunks are dropped as they empty.)
   */
  #shrink(): void {
    this.#items = this.#items.length === 0 ? [] : this.#items.slice();
    this.#peak = this.#items.length;
  }

  #siftDown(item: T, i: number): void {
    const items = this.#items;
    const less = this.#less;
    const n = items.length; // the flat part: slots below FLAT
    // Down through the flat array while both children are in it, as in one flat array.
    for (;;) {
      let child = 2 * i + 1;
      if (child + 1 >= n) break;
      let down = items[child] as T;
      const right = items[child + 1] as T;
      if (less(right, down)) {
        down = right;
        child++;
      }
      if (!less(down, item)) {
        items[i] = item;
        return;
      }
      items[i] = down;
      i = child;
    }
    const length = this.#length;
    if (length === n) {
      // All flat: at most a last, lone child is left.
      const child = 2 * i + 1;
      if (child < n) {
        const down = items[child] as T;
        if (less(down, item)) {
          items[i] = down;
          i = child;
        }
      }
      items[i] = item;
      return;
    }
    // The rest: the levels in the chunks.
    for (;;) {
      let child = 2 * i + 1;
      if (child >= length) break;
      let down = this.#at(child);
      const right = child + 1;
      if (right < length) {
        const other = this.#at(right);
        if (less(other, down)) {
          child = right;
          down = other;
        }
      }
      if (!less(down, item)) break;
      this.#put(i, down);
      i = child;
    }
    this.#put(i, item);
  }
}

/** A chunk of a {@link Heap}, at its full size (its slots past the heap's length are holes or `undefined`). */
function newChunk<T>(): T[] {
  return new Array<T>(CHUNK);
}

/** A {@link KeyedHeap}'s arrays of up to this many slots are kept as they are: too small to be worth a copy. */
const SHRINK_MIN = 64;

/** Fewest slots a {@link KeyedHeap} allocates. */
const KEYED_MIN = 16;

/**
 * A binary min-heap of items under two numeric keys, compared in order (the second breaks ties
 * of the first; callers make it unique, so equal first keys come out in its order). The keys
 * live in typed arrays next to the items: sifting compares them without touching the items,
 * whose records are scattered over the heap (a pop of a million-job heap of records spent most
 * of its time on cache misses reading their fields).
 *
 * @internal
 */
export class KeyedHeap<T> {
  #items: T[] = [];
  #first = new Float64Array(KEYED_MIN);
  #second = new Float64Array(KEYED_MIN);
  /** The most items held since the arrays were last made (see {@link Heap}). */
  #peak = 0;

  /** Number of items held. */
  get length(): number {
    return this.#items.length;
  }

  /** The smallest item without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** The smallest item's first key, or `Infinity` when empty. */
  peekKey(): number {
    return this.#items.length === 0 ? Infinity : (this.#first[0] as number);
  }

  /** The smallest item's second key, or `Infinity` when empty. */
  peekSecond(): number {
    return this.#items.length === 0 ? Infinity : (this.#second[0] as number);
  }

  /** Adds an item under its keys: O(log n). */
  push(item: T, first: number, second: number): void {
    const items = this.#items;
    let i = items.length;
    if (i === this.#first.length) this.#resize(i + (i >> 1) + KEYED_MIN);
    items.push(item);
    if (i >= this.#peak) this.#peak = i + 1;
    const a = this.#first;
    const b = this.#second;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pa = a[parent] as number;
      if (!(first < pa || (first === pa && second < (b[parent] as number)))) break;
      items[i] = items[parent] as T;
      a[i] = pa;
      b[i] = b[parent] as number;
      i = parent;
    }
    items[i] = item;
    a[i] = first;
    b[i] = second;
  }

  /** Removes and returns the smallest item, or `undefined` when empty: O(log n). */
  pop(): T | undefined {
    const items = this.#items;
    const n = items.length - 1;
    if (n < 0) return undefined;
    const top = items[0] as T;
    const last = items.pop() as T;
    if (n > 0) this.#siftDown(last, this.#first[n] as number, this.#second[n] as number, 0);
    if (n <= this.#peak >> 2 && this.#peak > SHRINK_MIN) this.#resize(Math.max(KEYED_MIN, n));
    return top;
  }

  /**
   * How many items have a first key of at most `first` and pass `live`: O(that many), without
   * changing the heap (they are the top of it: a parent's key is never above its children's).
   */
  countAtMost(first: number, live: (item: T) => boolean): number {
    const items = this.#items;
    const a = this.#first;
    const n = items.length;
    if (n === 0 || (a[0] as number) > first) return 0;
    const stack = [0];
    let count = 0;
    for (let i = stack.pop(); i !== undefined; i = stack.pop()) {
      if (live(items[i] as T)) count++;
      const left = 2 * i + 1;
      if (left < n && (a[left] as number) <= first) stack.push(left);
      if (left + 1 < n && (a[left + 1] as number) <= first) stack.push(left + 1);
    }
    return count;
  }

  /** Keeps only the items for which `keep` returns true, then restores heap order: O(n). */
  filterInPlace(keep: (item: T) => boolean): void {
    const items = this.#items;
    const a = this.#first;
    const b = this.#second;
    let kept = 0;
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as T;
      if (!keep(item)) continue;
      items[kept] = item;
      a[kept] = a[i] as number;
      b[kept] = b[i] as number;
      kept++;
    }
    items.length = kept;
    this.#resize(Math.max(KEYED_MIN, kept));
    this.#peak = kept;
    for (let i = (kept >> 1) - 1; i >= 0; i--) this.#siftDown(items[i] as T, this.#first[i] as number, this.#second[i] as number, i);
  }

  /** Every item, in no particular order. */
  values(): readonly T[] {
    return this.#items;
  }

  /** Removes every item. */
  clear(): void {
    this.#items = [];
    this.#first = new Float64Array(KEYED_MIN);
    this.#second = new Float64Array(KEYED_MIN);
    this.#peak = 0;
  }

  /** Moves the keys to arrays of `capacity` slots (at least what is held) and resets the peak. */
  #resize(capacity: number): void {
    const n = this.#items.length;
    const a = new Float64Array(capacity);
    const b = new Float64Array(capacity);
    a.set(this.#first.subarray(0, n));
    b.set(this.#second.subarray(0, n));
    this.#first = a;
    this.#second = b;
    if (this.#peak > capacity) {
      // A shrink: the items' array is made again too, so that it gives its slots back.
      this.#items = this.#items.slice();
      this.#peak = n;
    }
  }

  #siftDown(item: T, first: number, second: number, i: number): void {
    const items = this.#items;
    const a = this.#first;
    const b = this.#second;
    const n = items.length;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      let ca = a[child] as number;
      let cb = b[child] as number;
      const right = child + 1;
      if (right < n) {
        const ra = a[right] as number;
        if (ra < ca || (ra === ca && (b[right] as number) < cb)) {
          child = right;
          ca = ra;
          cb = b[right] as number;
        }
      }
      if (!(ca < first || (ca === first && cb < second))) break;
      items[i] = items[child] as T;
      a[i] = ca;
      b[i] = cb;
      i = child;
    }
    items[i] = item;
    a[i] = first;
    b[i] = second;
  }
}
