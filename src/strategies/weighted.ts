import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { bindOrderOf } from './bind-order.js';
import { BOUND, ENTERED, type FastPicker, LEFT, PICK_ELIGIBLE, UNBOUND } from './fast.js';
import type { Picker, SourceView, Strategy } from './strategy.js';

/** Past this, `picks * weight` could lose integer precision: rebase the credits. */
const REBASE_AT = 2 ** 50;

/**
 * The eligible sources of one weight, as a binary heap of slots: highest stored credit first,
 * then first in the list. While a source is eligible, its credit after `G` picks is its stored
 * value plus `weight * G`, so within a weight the order of credits is the order of stored values,
 * which only the winner's charge changes.
 */
class WeightGroup {
  readonly weight: number;
  heap = new Int32Array(8);
  size = 0;
  constructor(weight: number) {
    this.weight = weight;
  }
}

/**
 * nginx's smooth weighted round-robin. Every eligible source adds its weight to its credit; the
 * highest credit wins (first in the list on a tie) and is charged the sum of the eligible weights.
 * Ineligible sources neither gain credit nor count in the sum, so a source that was empty for a
 * while comes back with the credit it left with: no burst.
 */
class WeightedPicker implements FastPicker {
  /**
   * The bind orders of the sources as last seen (see `bindOrderOf`: not the views, which would
   * keep a source that left the list alive), and their credits at the same positions.
   */
  #orders: number[] = [];
  #credits: number[] = [];

  pick(list: readonly SourceView[]): SourceView {
    this.#sync(list);
    const credits = this.#credits;
    let total = 0;
    let best = -1;
    let bestCredit = -Infinity;
    for (let i = 0; i < list.length; i++) {
      const view = list[i] as SourceView;
      if (!view.eligible) continue;
      const weight = view.weight;
      const credit = (credits[i] as number) + weight;
      credits[i] = credit;
      total += weight;
      if (credit > bestCredit) {
        best = i;
        bestCredit = credit;
      }
    }
    if (best < 0) return undefined as never; // unreachable: pick is called only when an entry is eligible
    credits[best] = bestCredit - total;
    return list[best] as SourceView;
  }

  // ------------------------------------------------------------ the fast path (the dispatcher's)
  //
  // The same sequence as `pick`, without touching every source per pick. Every eligible source
  // gains its weight at every pick, so instead of adding it, count the picks (`#picks`) and store,
  // for an eligible source, its credit minus `weight * #picks` (for an ineligible one, its credit).
  // A pick then compares the top of each weight's heap (the sources of one weight keep their order
  // between picks) and charges the winner the eligible total: O(distinct weights + log n).

  #picks = 0;
  /** The sum of the eligible weights. */
  #total = 0;
  #maxWeight = 1;
  /** By slot: the stored credit (see above), the place in its group's heap, the source. */
  #stored = new Float64Array(16);
  #place = new Int32Array(16);
  #sources: (Lane | undefined)[] = [];
  /** By slot: the source's list position, renumbered on every bind and unbind (the tie-break). */
  #rank = new Float64Array(16);
  readonly #groups: WeightGroup[] = [];
  readonly #byWeight = new Map<number, WeightGroup>();

  [BOUND](source: Lane): void {
    const slot = source.slot;
    if (slot >= this.#stored.length) {
      const stored = new Float64Array(Math.max(slot + 1, this.#stored.length * 2));
      stored.set(this.#stored);
      this.#stored = stored;
      const place = new Int32Array(stored.length);
      place.set(this.#place);
      this.#place = place;
      const rank = new Float64Array(stored.length);
      rank.set(this.#rank);
      this.#rank = rank;
    }
    this.#stored[slot] = 0;
    this.#sources[slot] = source;
    this.#rerank();
  }

  [UNBOUND](source: Lane): void {
    this.#sources[source.slot] = undefined;
    this.#rerank();
    // The last bound source of its weight takes the weight's group with it: sources that come
    // and go (subscriptions, remote sources) with ever new weights would otherwise leave one
    // group each behind, and every pick compares every group. Kept while any bound source has
    // that weight, so a source going empty and back costs no allocation.
    const weight = source.weight;
    const group = this.#byWeight.get(weight);
    if (group === undefined || group.size > 0) return;
    for (const other of this.#sources) if (other !== undefined && other.weight === weight) return;
    this.#byWeight.delete(weight);
    this.#groups.splice(this.#groups.indexOf(group), 1);
  }

  /** Reads every bound source's list position again. Their order does not change, so the heaps stay valid. */
  #rerank(): void {
    const sources = this.#sources;
    for (let slot = 0; slot < sources.length; slot++) {
      const source = sources[slot];
      if (source !== undefined) this.#rank[slot] = source.index;
    }
  }

  [ENTERED](source: Lane): void {
    const slot = source.slot;
    const weight = source.weight;
    this.#stored[slot] = (this.#stored[slot] as number) - weight * this.#picks;
    this.#total += weight;
    let group = this.#byWeight.get(weight);
    if (group === undefined) {
      group = new WeightGroup(weight);
      this.#byWeight.set(weight, group);
      this.#groups.push(group);
      if (weight > this.#maxWeight) this.#maxWeight = weight;
    }
    if (group.size === group.heap.length) {
      const heap = new Int32Array(group.size * 2);
      heap.set(group.heap);
      group.heap = heap;
    }
    const at = group.size++;
    group.heap[at] = slot;
    this.#place[slot] = at;
    this.#up(group, at);
  }

  [LEFT](source: Lane): void {
    const slot = source.slot;
    const weight = source.weight;
    const group = this.#byWeight.get(weight) as WeightGroup;
    const at = this.#place[slot] as number;
    const last = group.heap[--group.size] as number;
    if (last !== slot) {
      group.heap[at] = last;
      this.#place[last] = at;
      this.#up(group, at);
      this.#down(group, this.#place[last] as number);
    }
    this.#stored[slot] = (this.#stored[slot] as number) + weight * this.#picks;
    this.#total -= weight;
  }

  [PICK_ELIGIBLE](_eligible: EligibleSet, _list: readonly Lane[]): Lane {
    if (this.#picks * this.#maxWeight >= REBASE_AT) this.#rebase();
    const picks = ++this.#picks;
    const stored = this.#stored;
    const rank = this.#rank;
    const groups = this.#groups;
    let best = -1;
    let bestGroup: WeightGroup | undefined;
    let bestCredit = -Infinity;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g] as WeightGroup;
      if (group.size === 0) continue;
      const slot = group.heap[0] as number;
      const credit = (stored[slot] as number) + group.weight * picks;
      if (credit > bestCredit || (credit === bestCredit && (rank[slot] as number) < (rank[best] as number))) {
        best = slot;
        bestGroup = group;
        bestCredit = credit;
      }
    }
    stored[best] = (stored[best] as number) - this.#total;
    this.#down(bestGroup as WeightGroup, 0);
    return this.#sources[best] as Lane;
  }

  /** Folds the picks counted so far into the stored credits of the eligible sources. */
  #rebase(): void {
    const picks = this.#picks;
    for (const group of this.#groups) {
      for (let i = 0; i < group.size; i++) {
        const slot = group.heap[i] as number;
        this.#stored[slot] = (this.#stored[slot] as number) + group.weight * picks;
      }
    }
    this.#picks = 0;
  }

  /** Whether slot `a` goes before slot `b` in a heap: higher stored credit, then first in the list. */
  #before(a: number, b: number): boolean {
    const ca = this.#stored[a] as number;
    const cb = this.#stored[b] as number;
    return ca > cb || (ca === cb && (this.#rank[a] as number) < (this.#rank[b] as number));
  }

  #up(group: WeightGroup, at: number): void {
    const heap = group.heap;
    const slot = heap[at] as number;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      const above = heap[parent] as number;
      if (!this.#before(slot, above)) break;
      heap[at] = above;
      this.#place[above] = at;
      at = parent;
    }
    heap[at] = slot;
    this.#place[slot] = at;
  }

  #down(group: WeightGroup, at: number): void {
    const heap = group.heap;
    const n = group.size;
    const slot = heap[at] as number;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && this.#before(heap[child + 1] as number, heap[child] as number)) child++;
      const below = heap[child] as number;
      if (!this.#before(below, slot)) break;
      heap[at] = below;
      this.#place[below] = at;
      at = child;
    }
    heap[at] = slot;
    this.#place[slot] = at;
  }

  /** Keeps credits attached to their sources when the list changes (a bind or an unsubscribe). */
  #sync(list: readonly SourceView[]): void {
    const orders = this.#orders;
    let same = orders.length === list.length;
    for (let i = 0; same && i < list.length; i++) same = orders[i] === bindOrderOf(list[i] as SourceView);
    if (same) return;
    const old = new Map<number, number>();
    for (let i = 0; i < orders.length; i++) old.set(orders[i] as number, this.#credits[i] as number);
    this.#orders = list.map(bindOrderOf);
    this.#credits = this.#orders.map((order) => old.get(order) ?? 0);
  }
}

/**
 * Shares jobs among eligible sources in proportion to their `weight`, smoothly: 6:3:1 gives
 * A B A A B A C A B A, not A A A A A A B B B C.
 */
export const Weighted: Strategy = Object.freeze({
  name: 'Weighted',
  create: (): Picker => new WeightedPicker(),
});
