/** Size of the first chunk; each later chunk doubles, up to {@link MAX_CHUNK}. */
const FIRST_CHUNK = 16;
const MAX_CHUNK = 2048;

/** One segment: written once from the front, read once from the front. */
class Chunk<T> {
  readonly items: (T | undefined)[];
  read = 0;
  write = 0;
  next: Chunk<T> | undefined = undefined;
  constructor(size: number) {
    this.items = new Array<T | undefined>(size);
  }
}

/**
 * A FIFO queue of fixed-size array chunks: O(1) push, shift and length, no per-item allocation,
 * and no copying as it grows (a doubling ring buffer copies everything each time it fills up,
 * which showed as 9% of a 200,000-job run). Chunks are dropped as they drain, so a burst gives its
 * memory back; a queue that drains to empty reuses its last chunk like a ring, so the steady
 * state of a short queue allocates nothing.
 *
 * @internal
 */
export class ChunkedQueue<T> {
  #head: Chunk<T> = new Chunk<T>(FIRST_CHUNK);
  #tail: Chunk<T> = this.#head;
  #length = 0;

  /** Number of items held. */
  get length(): number {
    return this.#length;
  }

  /** Appends an item at the tail. */
  push(item: T): void {
    let tail = this.#tail;
    if (tail.write === tail.items.length) {
      const next = new Chunk<T>(Math.min(tail.items.length * 2, MAX_CHUNK));
      tail.next = next;
      this.#tail = tail = next;
    }
    tail.items[tail.write++] = item;
    this.#length++;
  }

  /** Removes and returns the head, or `undefined` when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    let head = this.#head;
    if (head.read === head.write) head = this.#head = head.next as Chunk<T>; // a full chunk, read out
    const item = head.items[head.read];
    head.items[head.read++] = undefined; // let the item be collected
    if (--this.#length === 0) {
      // Empty: the head is the tail. Rewind it (or swap a big one for a small one) for reuse.
      if (head.items.length > FIRST_CHUNK * 8) {
        this.#head = this.#tail = new Chunk<T>(FIRST_CHUNK);
      } else {
        head.read = head.write = 0;
      }
    }
    return item;
  }

  /** The head without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    if (this.#length === 0) return undefined;
    const head = this.#head;
    if (head.read < head.write) return head.items[head.read];
    const next = head.next as Chunk<T>;
    return next.items[next.read];
  }

  /** Calls `visit` on the items from the head, in order, until it returns false or none is left. */
  visitWhile(visit: (item: T) => boolean): void {
    for (let chunk: Chunk<T> | undefined = this.#head; chunk !== undefined; chunk = chunk.next) {
      for (let i = chunk.read; i < chunk.write; i++) if (!visit(chunk.items[i] as T)) return;
    }
  }

  /** Keeps only the items for which `keep` returns true, in order. */
  filterInPlace(keep: (item: T) => boolean): void {
    const kept: T[] = [];
    for (let n = this.#length; n > 0; n--) {
      const item = this.shift() as T;
      if (keep(item)) kept.push(item);
    }
    for (const item of kept) this.push(item);
  }

  /** Removes every item. */
  clear(): void {
    this.#head = this.#tail = new Chunk<T>(FIRST_CHUNK);
    this.#length = 0;
  }
}
