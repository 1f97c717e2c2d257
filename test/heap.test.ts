/**
 * The binary heap behind a priority queue's due jobs (`src/internal/heap.ts`): its first 262,144
 * slots are one array, the rest chunks of 16,384 made at full size, and these runs cross both
 * boundaries both ways.
 */
import { describe, expect, it } from 'vitest';
import { Heap } from '../src/internal/heap.js';
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
