/**
 * qmux's one binary heap (`src/core/due/heap.ts`): the sifting of `BinaryHeap`, under its two
 * layouts. `Heap` is the one behind a priority queue's due jobs: its first 262,144 slots are one
 * array, the rest chunks of 16,384 made at full size, and these runs cross both boundaries both
 * ways. `KeyedHeap` keeps two numeric keys in typed arrays, and serves every other heap.
 */
import { describe, expect, it } from 'vitest';
import { type HeapPlaced, Heap, KeyedHeap } from '../src/core/due/heap.js';
import { Rng } from './sim/prng.js';

interface Item {
  key: number;
  seq: number;
}

const less = (a: Item, b: Item): boolean => a.key < b.key || (a.key === b.key && a.seq < b.seq);
const byOrder = (a: Item, b: Item): number => a.key - b.key || a.seq - b.seq;

describe('Heap', () => {
  it('gives items back in order over random pushes and pops, past its flat part and back', () => {
    const rng = new Rng(5);
    const heap = new Heap<Item>(less);
    // The reference: one FIFO per key (seqs only grow, so each is in order), the lowest key first.
    const KEYS = 50;
    const buckets: Item[][] = Array.from({ length: KEYS }, () => []);
    const heads = new Array<number>(KEYS).fill(0);
    let held = 0;
    let wrong = 0;
    let seq = 0;
    const popBoth = (): void => {
      let key = 0;
      while (heads[key] === (buckets[key] as Item[]).length) key++;
      const expected = (buckets[key] as Item[])[heads[key] as number];
      heads[key] = (heads[key] as number) + 1;
      held--;
      if (heap.peek() !== expected || heap.pop() !== expected) wrong++;
    };
    // 262,144 slots are flat, the rest in chunks of 16,384: grow well past that, shrink below one
    // chunk's worth, grow again, drain, crossing every boundary both ways.
    for (const [target, pushChance] of [
      [300_000, 0.8],
      [1_500, 0.2],
      [280_000, 0.7],
      [0, 0.3],
    ] as const) {
      while (held !== target) {
        if (held === 0 || rng.chance(pushChance)) {
          const item = { key: rng.int(0, KEYS - 1), seq: seq++ };
          heap.push(item);
          (buckets[item.key] as Item[]).push(item);
          held++;
        } else popBoth();
      }
      expect(heap.length).toBe(target);
    }
    expect(wrong).toBe(0);
    expect(heap.pop()).toBeUndefined();
    expect(heap.peek()).toBeUndefined();
  });

  it('filterInPlace keeps what it is told to, in order, and values() holds every item', () => {
    const rng = new Rng(9);
    const heap = new Heap<Item>(less);
    const all: Item[] = [];
    for (let i = 0; i < 300_000; i++) {
      const item = { key: rng.int(0, 1000), seq: i };
      heap.push(item);
      all.push(item);
    }
    const seen = new Uint8Array(all.length);
    for (const item of heap.values()) seen[item.seq] = (seen[item.seq] as number) + 1;
    expect(seen.every((count) => count === 1)).toBe(true);
    heap.filterInPlace((item) => item.seq % 3 !== 0);
    const kept = all.filter((item) => item.seq % 3 !== 0).sort(byOrder);
    expect(heap.length).toBe(kept.length);
    let wrong = 0;
    for (const item of kept) if (heap.pop() !== item) wrong++;
    expect(wrong).toBe(0);
    expect(heap.length).toBe(0);
    heap.push({ key: 1, seq: 0 });
    heap.clear();
    expect(heap.length).toBe(0);
    expect(heap.values()).toEqual([]);
  });

  it('values() after pops past the flat part, and a filterInPlace that keeps more than the flat part, refill the chunks right', () => {
    const rng = new Rng(13);
    const heap = new Heap<Item>(less);
    const n = 330_000; // past the flat part's 262,144 and four chunks
    const all: Item[] = [];
    for (let i = 0; i < n; i++) {
      const item = { key: rng.int(0, 1000), seq: i };
      heap.push(item);
      all.push(item);
    }
    const sorted = [...all].sort(byOrder);
    let wrong = 0;
    for (let i = 0; i < 20_000; i++) if (heap.pop() !== sorted[i]) wrong++; // back across a chunk boundary
    expect(wrong).toBe(0);
    const left = sorted.slice(20_000);
    const seen = new Uint8Array(n);
    for (const item of heap.values()) seen[item.seq] = (seen[item.seq] as number) + 1;
    expect(heap.values()).toHaveLength(left.length);
    expect(left.every((item) => seen[item.seq] === 1)).toBe(true);
    heap.filterInPlace((item) => item.seq % 10 !== 0); // keeps about 279,000: past the flat part
    const kept = left.filter((item) => item.seq % 10 !== 0);
    expect(kept.length).toBeGreaterThan(262_144 + 16_384);
    expect(heap.length).toBe(kept.length);
    for (let i = 0; i < 7; i++) heap.push({ key: -1, seq: n + i }); // appends go on filling the last chunk
    for (let i = 0; i < 7; i++) if (heap.pop()?.seq !== n + i) wrong++;
    for (const item of kept) if (heap.pop() !== item) wrong++;
    expect(wrong).toBe(0);
    expect(heap.length).toBe(0);
  });
});

/** An item of a tracked heap. */
class Placed implements HeapPlaced {
  heapAt = -1;
  constructor(
    readonly id: number,
    public first: number,
    readonly second: number,
  ) {}
}

/**
 * The hand-written, 0-based heap that Deadlines and RateWaits each had before they shared
 * KeyedHeap (the same strict comparisons, a hole instead of swaps): equal keys must come out in
 * the very same order from the shared heap, since nothing else orders them.
 */
class OldIndexedHeap {
  items: Placed[] = [];
  push(item: Placed): void {
    item.heapAt = this.items.length;
    this.items.push(item);
    this.#up(item.heapAt);
  }
  pop(): Placed | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }
  remove(item: Placed): void {
    const at = item.heapAt;
    item.heapAt = -1;
    const last = this.items.pop() as Placed;
    if (last !== item) {
      this.items[at] = last;
      last.heapAt = at;
      this.#up(at);
      this.#down(last.heapAt);
    }
  }
  #before(a: Placed, b: Placed): boolean {
    return a.first < b.first || (a.first === b.first && a.second < b.second);
  }
  #up(i: number): void {
    const items = this.items;
    const item = items[i] as Placed;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const up = items[parent] as Placed;
      if (!this.#before(item, up)) break;
      items[i] = up;
      up.heapAt = i;
      i = parent;
    }
    items[i] = item;
    item.heapAt = i;
  }
  #down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i] as Placed;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.#before(items[child + 1] as Placed, items[child] as Placed)) child++;
      const down = items[child] as Placed;
      if (!this.#before(down, item)) break;
      items[i] = down;
      down.heapAt = i;
      i = child;
    }
    items[i] = item;
    item.heapAt = i;
  }
}

describe('KeyedHeap', () => {
  it('gives items back by (first, second) over random pushes and pops, growing and shrinking its arrays', () => {
    const rng = new Rng(21);
    const heap = new KeyedHeap<number>();
    const held: [number, number, number][] = [];
    let seq = 0;
    let wrong = 0;
    for (const [target, pushChance] of [
      [5_000, 0.8],
      [10, 0.2],
      [3_000, 0.7],
      [0, 0.3],
    ] as const) {
      while (held.length !== target) {
        if (held.length === 0 || rng.chance(pushChance)) {
          const entry: [number, number, number] = [rng.int(0, 30), seq, seq++];
          heap.push(entry[2], entry[0], entry[1]);
          held.push(entry);
        } else {
          held.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
          const [first, second, id] = held.shift() as [number, number, number];
          if (heap.peekKey() !== first || heap.peekSecond() !== second || heap.peek() !== id || heap.pop() !== id) wrong++;
        }
      }
      expect(heap.length).toBe(target);
    }
    expect(wrong).toBe(0);
    expect(heap.pop()).toBeUndefined();
    expect(heap.peekKey()).toBe(Infinity);
  });

  it('tracked: removeAt by the position written into the item, rekeyAt, and the same order of equal keys as the heaps it replaced', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rng = new Rng(seed);
      const heap = new KeyedHeap<Placed>({ tracked: true });
      const old = new OldIndexedHeap();
      const mine: Placed[] = [];
      const theirs: Placed[] = [];
      let id = 0;
      for (let step = 0; step < 3000; step++) {
        const r = rng.next();
        if (r < 0.5 || mine.length === 0) {
          // Few distinct keys, second key 0 (as Deadlines and RateWaits push): ties everywhere.
          const first = rng.int(0, 8);
          const a = new Placed(id, first, 0);
          const b = new Placed(id++, first, 0);
          heap.push(a, first, 0);
          old.push(b);
          mine.push(a);
          theirs.push(b);
        } else if (r < 0.7) {
          const i = rng.int(0, mine.length - 1);
          const a = mine.splice(i, 1)[0] as Placed;
          const b = theirs.splice(i, 1)[0] as Placed;
          expect(heap.itemAt(a.heapAt)).toBe(a);
          heap.removeAt(a.heapAt);
          old.remove(b);
        } else {
          const a = heap.pop() as Placed;
          const b = old.pop() as Placed;
          expect(a.id).toBe(b.id);
          mine.splice(mine.indexOf(a), 1);
          theirs.splice(theirs.indexOf(b), 1);
        }
        for (let at = 1; at <= heap.length; at++) if (heap.itemAt(at).heapAt !== at) expect.fail(`position ${at} not tracked`);
      }
      // rekeyAt: every item gets a new first key, in place; the order follows.
      for (const a of [...mine]) {
        a.first = rng.int(0, 100);
        heap.rekeyAt(a.heapAt, a.first);
      }
      const sorted = [...mine].sort((a, b) => a.first - b.first);
      for (const a of sorted) expect(heap.pop()?.first).toBe(a.first);
    }
  });

  it('tagged: carries a number beside each item that filterInPlace can read, and countAtMost counts the top', () => {
    const heap = new KeyedHeap<string>({ tagged: true });
    for (let i = 0; i < 100; i++) heap.push(`i${i}`, i % 10, i, i * 2);
    expect(heap.countAtMost(2, () => true)).toBe(30);
    expect(heap.countAtMost(2, (item) => item !== 'i0')).toBe(29);
    heap.filterInPlace((_item, tag) => tag % 4 === 0); // even i
    expect(heap.length).toBe(50);
    const out: string[] = [];
    for (let at = 1; at <= heap.length; at++) expect(heap.tagAt(at)).toBe(Number(heap.itemAt(at).slice(1)) * 2);
    for (let item = heap.pop(); item !== undefined; item = heap.pop()) out.push(item);
    const expected = Array.from({ length: 50 }, (_, k) => 2 * k).sort((a, b) => (a % 10) - (b % 10) || a - b);
    expect(out).toEqual(expected.map((i) => `i${i}`));
    expect(heap.values()).toEqual([]);
  });
});
