/**
 * qmux's one binary heap. The sifting is written once, in {@link BinaryHeap}, over positions; a
 * heap's storage is one of two layouts that say how to compare and move the entries at two
 * positions:
 *
 * - {@link KeyedHeap}: items under two numbers kept in typed arrays beside them (and, if asked, a
 *   third number that is carried but not compared, and each item's position written into it).
 *   Due times, rate windows, deadlines, key turns and weighted credits use it.
 * - {@link Heap}: items ordered by a "less than" function, in a flat array and then chunks: a
 *   priority queue's due jobs (three keys, and up to millions of them).
 *
 * Two layouts, so the sifting code sees at most two kinds of heap: its calls to `before` and
 * `move` stay inlinable. Nothing here imports anything: it is a leaf.
 *
 * @module
 */

/**
 * The sifting of a binary min-heap over positions 1 to `count` (a parent at `p` has its children
 * at `2p` and `2p + 1`). Position 0 is the subclass's scratch slot: the entry being sifted waits
 * there while the others move into the hole it left, so an entry is written once per level it
 * passes, not swapped. Equal entries never move past each other (every comparison is strict), so
 * a heap whose order breaks ties by a sequence number gives them in that order.
 *
 * A subclass keeps the entries and says how to compare and move two of them; it calls the
 * protected methods below after it has stored an entry, and it allocates nothing per operation.
 *
 * @internal
 */
export abstract class BinaryHeap {
  /** Entries held, at positions 1 to `count`. */
  protected count = 0;

  /** Whether the entry at `a` goes before the entry at `b` (strictly). */
  protected abstract before(a: number, b: number): boolean;

  /** Copies the entry at `from` to `to` (either may be the scratch slot 0). */
  protected abstract move(from: number, to: number): void;

  /** Moves the entry at `at` up to its place; returns where it ends. */
  protected siftUp(at: number): number {
    if (at <= 1 || !this.before(at, at >> 1)) return at;
    this.move(at, 0);
    do {
      const parent = at >> 1;
      this.move(parent, at);
      at = parent;
    } while (at > 1 && this.before(0, at >> 1));
    this.move(0, at);
    return at;
  }

  /** Moves the entry at `at` down to its place. */
  protected siftDown(at: number): void {
    // Settled already (a leaf, or no child goes before it): nothing moves, as in `siftUp`.
    const n = this.count;
    let child = 2 * at;
    if (child > n) return;
    if (child < n && this.before(child + 1, child)) child++;
    if (!this.before(child, at)) return;
    this.move(at, 0);
    this.move(child, at);
    this.sinkHeld(child);
  }

  /** Puts the entry in the scratch slot at its place at or below the hole at `at`. */
  protected sinkHeld(at: number): void {
    const n = this.count;
    for (;;) {
      let child = 2 * at;
      if (child > n) break;
      if (child < n && this.before(child + 1, child)) child++;
      if (!this.before(child, 0)) break;
      this.move(child, at);
      at = child;
    }
    this.move(0, at);
  }

  /**
   * Takes the entry at position 1 out (the subclass has read it). The last entry fills the hole;
   * the subclass then frees the last position (`count + 1`), whose entry has moved.
   */
  protected removeFirst(): void {
    const n = this.count--;
    if (n <= 1) return;
    this.move(n, 0);
    this.sinkHeld(1);
  }

  /** Takes the entry at `at` out; as {@link removeFirst}, the subclass then frees position `count + 1`. */
  protected removeAt(at: number): void {
    const n = this.count--;
    if (at === n) return;
    this.move(n, at);
    if (this.siftUp(at) === at) this.siftDown(at);
  }

  /** Restores heap order over every entry: O(n). */
  protected heapify(): void {
    for (let at = this.count >> 1; at >= 1; at--) this.siftDown(at);
  }
}

/** A {@link KeyedHeap}'s arrays of up to this many slots are kept as they are: too small to be worth a copy. */
const SHRINK_MIN = 64;

/** Fewest slots a {@link KeyedHeap} allocates. */
const KEYED_MIN = 16;

/** An item of a {@link KeyedHeap} made with `tracked`: the heap writes its position here. */
export interface HeapPlaced {
  /** Its position in the heap (1 or more) while in one; the heap never reads it. */
  heapAt: number;
}

/**
 * A binary min-heap of items under two numeric keys, compared in order (the second breaks ties
 * of the first; callers that need a stable order make it unique, and entries equal in both keep
 * no order). The keys live in typed arrays next to the items: sifting compares them without
 * touching the items, whose records are scattered over the heap (a pop of a million-job heap of
 * records spent most of its time on cache misses reading their fields).
 *
 * Made `tagged`, each entry also carries a number that is not compared (see `KeyHeap`: the token
 * that tells a stale entry). Made `tracked`, it writes every item's position into the item's
 * `heapAt` as it moves, so that the item can be taken out by {@link removeAt} in O(log n).
 *
 * @internal
 */
export class KeyedHeap<T> extends BinaryHeap {
  #items: T[] = [undefined as T];
  #first = new Float64Array(KEYED_MIN);
  #second = new Float64Array(KEYED_MIN);
  #tags: Float64Array<ArrayBuffer> | undefined;
  readonly #tracked: boolean;
  /** The most items held since the arrays were last made: about their capacity, which `pop` never gives back by itself. */
  #peak = 0;

  constructor(options?: { readonly tagged?: boolean; readonly tracked?: boolean }) {
    super();
    this.#tags = options?.tagged === true ? new Float64Array(KEYED_MIN) : undefined;
    this.#tracked = options?.tracked === true;
  }

  /** Number of items held. */
  get length(): number {
    return this.count;
  }

  /** The smallest item without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.#items[1];
  }

  /** The smallest item's first key, or `Infinity` when empty. */
  peekKey(): number {
    return this.count === 0 ? Infinity : (this.#first[1] as number);
  }

  /** The smallest item's second key, or `Infinity` when empty. */
  peekSecond(): number {
    return this.count === 0 ? Infinity : (this.#second[1] as number);
  }

  /** The item at position `at` (1 to {@link length}; position 1 is the smallest). */
  itemAt(at: number): T {
    return this.#items[at] as T;
  }

  /** The first key at position `at`. */
  firstAt(at: number): number {
    return this.#first[at] as number;
  }

  /** The second key at position `at`. */
  secondAt(at: number): number {
    return this.#second[at] as number;
  }

  /** The tag at position `at` (a `tagged` heap's). */
  tagAt(at: number): number {
    return (this.#tags as Float64Array)[at] as number;
  }

  /** Adds an item under its keys (and tag): O(log n). */
  push(item: T, first: number, second: number, tag = 0): void {
    const at = ++this.count;
    if (at === this.#first.length) this.#resize(at + (at >> 1) + KEYED_MIN);
    this.#items.push(item);
    if (at > this.#peak) this.#peak = at;
    this.#first[at] = first;
    this.#second[at] = second;
    if (this.#tags !== undefined) this.#tags[at] = tag;
    if (this.#tracked) (item as HeapPlaced).heapAt = at;
    this.siftUp(at);
  }

  /** Removes and returns the smallest item, or `undefined` when empty: O(log n). */
  pop(): T | undefined {
    if (this.count === 0) return undefined;
    const top = this.#items[1] as T;
    this.removeFirst();
    this.#dropLast();
    return top;
  }

  /** Takes out the item at position `at` (a `tracked` item's `heapAt`): O(log n). */
  override removeAt(at: number): void {
    super.removeAt(at);
    this.#dropLast();
  }

  /** Gives the item at `at` a new first key and moves it to its place: O(log n). */
  rekeyAt(at: number, first: number): void {
    const was = this.#first[at] as number;
    this.#first[at] = first;
    if (first < was) this.siftUp(at);
    else this.siftDown(at);
  }

  /**
   * Sets the keys at `at` without moving anything: the caller keeps the heap order.
   */
  setKeysAt(at: number, first: number, second: number): void {
    this.#first[at] = first;
    this.#second[at] = second;
  }

  /**
   * How many items have a first key of at most `first` and pass `live`: O(that many), without
   * changing the heap (they are the top of it: a parent's key is never above its children's).
   */
  countAtMost(first: number, live: (item: T) => boolean): number {
    const items = this.#items;
    const a = this.#first;
    const n = this.count;
    if (n === 0 || (a[1] as number) > first) return 0;
    const stack = [1];
    let count = 0;
    for (let at = stack.pop(); at !== undefined; at = stack.pop()) {
      if (live(items[at] as T)) count++;
      const left = 2 * at;
      if (left <= n && (a[left] as number) <= first) stack.push(left);
      if (left + 1 <= n && (a[left + 1] as number) <= first) stack.push(left + 1);
    }
    return count;
  }

  /** Keeps only the items for which `keep` (given the item and its tag) returns true, then restores heap order: O(n). */
  filterInPlace(keep: (item: T, tag: number) => boolean): void {
    const items = this.#items;
    const a = this.#first;
    const b = this.#second;
    const tags = this.#tags;
    let kept = 0;
    for (let at = 1; at <= this.count; at++) {
      const item = items[at] as T;
      if (!keep(item, tags === undefined ? 0 : (tags[at] as number))) continue;
      kept++;
      items[kept] = item;
      a[kept] = a[at] as number;
      b[kept] = b[at] as number;
      if (tags !== undefined) tags[kept] = tags[at] as number;
      if (this.#tracked) (item as HeapPlaced).heapAt = kept;
    }
    items.length = kept + 1;
    items[0] = undefined as T;
    this.count = kept;
    this.#resize(Math.max(KEYED_MIN, kept + 1));
    this.#peak = kept;
    this.heapify();
    items[0] = undefined as T;
  }

  /** Every item, in no particular order: a new array. */
  values(): T[] {
    return this.#items.slice(1, this.count + 1);
  }

  /** Removes every item. */
  clear(): void {
    this.#items = [undefined as T];
    this.#first = new Float64Array(KEYED_MIN);
    this.#second = new Float64Array(KEYED_MIN);
    if (this.#tags !== undefined) this.#tags = new Float64Array(KEYED_MIN);
    this.count = 0;
    this.#peak = 0;
  }

  protected before(x: number, y: number): boolean {
    const a = this.#first;
    const fx = a[x] as number;
    const fy = a[y] as number;
    return fx < fy || (fx === fy && (this.#second[x] as number) < (this.#second[y] as number));
  }

  protected move(from: number, to: number): void {
    const item = this.#items[from] as T;
    this.#items[to] = item;
    this.#first[to] = this.#first[from] as number;
    this.#second[to] = this.#second[from] as number;
    if (this.#tags !== undefined) this.#tags[to] = this.#tags[from] as number;
    if (this.#tracked) (item as HeapPlaced).heapAt = to;
  }

  /** Frees the position past the last (its entry has moved) and the scratch slot; shrinks after a drain. */
  #dropLast(): void {
    const items = this.#items;
    items.pop();
    items[0] = undefined as T; // the scratch slot keeps no item alive
    const n = this.count;
    if (n <= this.#peak >> 2 && this.#peak > SHRINK_MIN) this.#resize(Math.max(KEYED_MIN, n + 1));
  }

  /** Moves the keys to arrays of `capacity` slots (at least what is held) and resets the peak. */
  #resize(capacity: number): void {
    const n = this.count + 1;
    this.#first = copied(this.#first, capacity, n);
    this.#second = copied(this.#second, capacity, n);
    if (this.#tags !== undefined) this.#tags = copied(this.#tags, capacity, n);
    if (this.#peak > capacity) {
      // A shrink: the items' array is made again too, so that it gives its slots back.
      this.#items = this.#items.slice();
      this.#peak = this.count;
    }
  }
}

function copied(array: Float64Array<ArrayBuffer>, capacity: number, n: number): Float64Array<ArrayBuffer> {
  const copy = new Float64Array(capacity);
  copy.set(array.subarray(0, Math.min(n, capacity)));
  return copy;
}

/** Positions a {@link Heap} keeps in one flat array (the scratch slot 0 included); the ones past it go to chunks. */
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
 * A binary min-heap ordered by a strict "less than" function fixed when it is made. Callers that
 * need stable order put a sequence number in the comparison, so equal keys come out in insertion
 * order.
 *
 * The positions below {@link FLAT} are one array; the ones past it are chunks of {@link CHUNK},
 * each made at its full size and dropped once its first slot is freed. One flat array would have
 * to be copied into a bigger one as it grows, and at a million items that copy took 12-15 ms (a
 * fresh 8 MB array's pages are faulted in one by one): a stall in the middle of a burst of due
 * jobs.
 *
 * @internal
 */
export class Heap<T> extends BinaryHeap {
  #items: T[] = [undefined as T];
  #spill: T[][] = [];
  readonly #less: (a: T, b: T) => boolean;
  /**
   * The most slots the flat array held since it was last made: about its capacity, which `pop`
   * never gives back by itself.
   */
  #peak = 0;

  constructor(less: (a: T, b: T) => boolean) {
    super();
    this.#less = less;
  }

  /** Number of items held. */
  get length(): number {
    return this.count;
  }

  /** The smallest item without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.#items[1];
  }

  /** Adds an item: O(log n). */
  push(item: T): void {
    const at = ++this.count;
    if (at < FLAT) {
      this.#items.push(item);
      if (at >= this.#peak) this.#peak = at + 1;
    } else {
      const k = at - FLAT;
      if ((k & SLOT) === 0) this.#spill.push(newChunk<T>());
      (this.#spill[k >>> CHUNK_BITS] as T[])[k & SLOT] = item;
    }
    this.siftUp(at);
  }

  /** Removes and returns the smallest item, or `undefined` when empty: O(log n). */
  pop(): T | undefined {
    if (this.count === 0) return undefined;
    const items = this.#items;
    const top = items[1] as T;
    this.removeFirst();
    const last = this.count + 1;
    if (last < FLAT) items.pop();
    else {
      const k = last - FLAT;
      const tail = this.#spill[k >>> CHUNK_BITS] as T[];
      tail[k & SLOT] = undefined as T; // the chunk keeps no popped item alive
      if ((k & SLOT) === 0) this.#spill.pop();
    }
    items[0] = undefined as T; // nor the scratch slot
    if (last <= this.#peak >> 2 && this.#peak > SHRINK_FLAT) this.#shrink();
    return top;
  }

  /** Keeps only the items for which `keep` returns true, then restores heap order: O(n). */
  filterInPlace(keep: (item: T) => boolean): void {
    const kept = this.values().filter(keep);
    this.#items = [undefined as T];
    this.#spill = [];
    this.count = 0;
    for (const item of kept) {
      const at = ++this.count;
      if (at < FLAT) this.#items.push(item);
      else {
        const k = at - FLAT;
        if ((k & SLOT) === 0) this.#spill.push(newChunk<T>());
        (this.#spill[k >>> CHUNK_BITS] as T[])[k & SLOT] = item;
      }
    }
    this.#peak = this.#items.length;
    this.heapify();
    this.#items[0] = undefined as T;
  }

  /** Every item, in no particular order: a new array. */
  values(): T[] {
    const all = this.#items.slice(1);
    for (let at = FLAT; at <= this.count; at++) all.push(this.#at(at));
    return all;
  }

  /** Removes every item. */
  clear(): void {
    this.#items = [undefined as T];
    this.#spill = [];
    this.count = 0;
    this.#peak = 0;
  }

  protected before(a: number, b: number): boolean {
    if (a < FLAT && b < FLAT) return this.#less(this.#items[a] as T, this.#items[b] as T);
    return this.#less(this.#at(a), this.#at(b));
  }

  protected move(from: number, to: number): void {
    if (from < FLAT && to < FLAT) this.#items[to] = this.#items[from] as T;
    else this.#put(to, this.#at(from));
  }

  #at(at: number): T {
    if (at < FLAT) return this.#items[at] as T;
    const k = at - FLAT;
    return (this.#spill[k >>> CHUNK_BITS] as T[])[k & SLOT] as T;
  }

  #put(at: number, item: T): void {
    if (at < FLAT) this.#items[at] = item;
    else {
      const k = at - FLAT;
      (this.#spill[k >>> CHUNK_BITS] as T[])[k & SLOT] = item;
    }
  }

  /**
   * Swaps the flat array for one sized to what it holds, once that is a quarter of its peak or
   * less: the copy costs O(n) against the 3n or more pops since the peak, so O(1) amortised, and
   * a drained heap holds no more than {@link SHRINK_FLAT} slots. (Chunks are dropped as they empty.)
   */
  #shrink(): void {
    this.#items = this.#items.slice();
    this.#peak = this.#items.length;
  }
}

/** A chunk of a {@link Heap}, at its full size (its slots past the heap's length are holes or `undefined`). */
function newChunk<T>(): T[] {
  return new Array<T>(CHUNK);
}
