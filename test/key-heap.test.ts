import { describe, expect, it } from 'vitest';
import { KeyHeap } from '../src/core/keys/key-heap.js';
import { type KeyState, WeightedKeyState } from '../src/core/keys/key-state.js';
import { Rng } from './sim/prng.js';

describe('KeyHeap: keys by a number, then activation order, leaving lazily', () => {
  it('always has the least live key on top, however keys join and leave (random runs against a sorted list)', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const rng = new Rng(seed);
      const random = (): number => rng.next();
      const keys = Array.from({ length: 60 }, (_, i) => new WeightedKeyState(`k${i}`, `k${i}`, undefined, undefined, i, 1));
      const heap = new KeyHeap((key) => (key as WeightedKeyState).start);
      const inHeap = new Set<WeightedKeyState>();
      const least = (): WeightedKeyState | undefined => [...inHeap].sort((a, b) => a.start - b.start || a.order - b.order)[0];
      for (let step = 0; step < 2000; step++) {
        const r = random();
        const key = keys[Math.floor(random() * keys.length)] as WeightedKeyState;
        if (r < 0.45 && !inHeap.has(key)) {
          key.start = Math.floor(random() * 20); // ties on the number: activation order decides
          heap.push(key);
          inHeap.add(key);
        } else if (r < 0.75 && inHeap.has(key)) {
          heap.remove(key); // from anywhere
          inHeap.delete(key);
        } else if (r < 0.9) {
          const top = heap.peek();
          expect(top).toBe(least());
          if (top !== undefined && random() < 0.5) {
            heap.remove(top);
            inHeap.delete(top as WeightedKeyState);
          }
        }
        expect(heap.length).toBe(inHeap.size);
      }
      // Drains in order.
      const out: KeyState[] = [];
      for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
        out.push(top);
        heap.remove(top);
      }
      expect(out).toEqual([...inHeap].sort((a, b) => a.start - b.start || a.order - b.order));
    }
  });

  it('a key that left and joins again is in it once, at its new number', () => {
    const [a, b] = [new WeightedKeyState('a', 'a', undefined, undefined, 0, 1), new WeightedKeyState('b', 'b', undefined, undefined, 1, 1)];
    const heap = new KeyHeap((key) => (key as WeightedKeyState).start);
    a.start = 5;
    b.start = 3;
    heap.push(a);
    heap.push(b);
    heap.remove(a); // not on top: its entry is left behind, stale
    a.start = 1;
    heap.push(a);
    expect(heap.length).toBe(2);
    expect(heap.peek()).toBe(a);
    heap.remove(a);
    expect(heap.peek()).toBe(b);
    heap.remove(b);
    expect(heap.peek()).toBeUndefined();
    expect(heap.length).toBe(0);
  });
});
