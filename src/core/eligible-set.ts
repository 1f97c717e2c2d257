/**
 * A set of list positions (0 to `capacity - 1`): a bitset with summary levels. Level 0 has one
 * bit per position; a bit of level k + 1 is set when word i of level k is not zero. Adding and
 * removing touch one word per level; the first position, and the first at or after a position,
 * are found by word scans that climb at most every level and come down one word per level:
 * O(log32 n), two levels up to 1024 positions, three up to 32768.
 *
 * The dispatcher keeps the eligible sources here by list position (see `Dispatcher.touch`), and
 * a keyed queue the places of its ready keys (see `RoundRobinTurns`).
 *
 * @internal
 */
export class EligibleSet {
  /** How many positions are in the set. */
  size = 0;
  #levels: Int32Array[] = [new Int32Array(1)];
  #capacity = 0;

  /** Positions that may be used. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Empties the set and makes room for `capacity` positions. */
  reset(capacity: number): void {
    this.#capacity = capacity;
    this.size = 0;
    const levels: Int32Array[] = [];
    let words = Math.max(1, Math.ceil(capacity / 32));
    for (;;) {
      levels.push(new Int32Array(words));
      if (words === 1) break;
      words = Math.ceil(words / 32);
    }
    this.#levels = levels;
  }

  /**
   * Makes room for `capacity` positions (more than now), keeping the positions in the set:
   * level 0 is copied, and each level above is made again from the one below (O(words)).
   */
  grow(capacity: number): void {
    const levels: Int32Array[] = [];
    let words = Math.max(1, Math.ceil(capacity / 32));
    const bottom = new Int32Array(words);
    bottom.set(this.#levels[0] as Int32Array);
    levels.push(bottom);
    while (words > 1) {
      const below = levels[levels.length - 1] as Int32Array;
      words = Math.ceil(words / 32);
      const level = new Int32Array(words);
      for (let w = 0; w < below.length; w++) if (below[w] !== 0) level[w >>> 5] = (level[w >>> 5] as number) | (1 << (w & 31));
      levels.push(level);
    }
    this.#levels = levels;
    this.#capacity = capacity;
  }

  has(at: number): boolean {
    return (((this.#levels[0] as Int32Array)[at >>> 5] as number) & (1 << (at & 31))) !== 0;
  }

  /** Adds `at` (which must not be in the set). */
  add(at: number): void {
    this.size++;
    const levels = this.#levels;
    for (let level = 0; level < levels.length; level++) {
      const words = levels[level] as Int32Array;
      const w = at >>> 5;
      const was = words[w] as number;
      words[w] = was | (1 << (at & 31));
      if (was !== 0) return;
      at = w;
    }
  }

  /** Removes `at` (which must be in the set). */
  delete(at: number): void {
    this.size--;
    const levels = this.#levels;
    for (let level = 0; level < levels.length; level++) {
      const words = levels[level] as Int32Array;
      const w = at >>> 5;
      const now = (words[w] as number) & ~(1 << (at & 31));
      words[w] = now;
      if (now !== 0) return;
      at = w;
    }
  }

  /** The lowest position in the set, or -1. */
  first(): number {
    return this.size === 0 ? -1 : this.nextFrom(0);
  }

  /** The lowest position in the set that is `from` or after, or -1. */
  nextFrom(from: number): number {
    if (from >= this.#capacity) return -1;
    const levels = this.#levels;
    const top = levels.length;
    let level = 0;
    let at = from;
    // Climb until a word holds a set bit at or after `at`.
    for (;;) {
      const words = levels[level] as Int32Array;
      const w = at >>> 5;
      if (w >= words.length) return -1;
      const word = (words[w] as number) & (-1 << (at & 31));
      if (word !== 0) {
        at = (w << 5) + lowestBit(word);
        break;
      }
      if (++level === top) return -1;
      at = w + 1;
    }
    // Come down: the lowest set bit of the word each level points to.
    while (level > 0) {
      level--;
      at = (at << 5) + lowestBit((levels[level] as Int32Array)[at] as number);
    }
    return at;
  }
}

/** The position of the lowest set bit of a non-zero 32-bit word. */
function lowestBit(word: number): number {
  return 31 - Math.clz32(word & -word);
}
