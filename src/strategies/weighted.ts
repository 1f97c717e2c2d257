import type { EligibleSet } from '../core/eligible-set.js';
import { type HeapPlaced, KeyedHeap } from '../core/due/heap.js';
import type { Lane } from '../core/lane.js';
import { bindOrderOf } from './bind-order.js';
import { BOUND, ENTERED, type FastPicker, LEFT, PICK_ELIGIBLE, UNBOUND } from '../core/fast-picker.js';
import type { Picker, SourceView, Strategy } from '../api/strategy.js';

/** Past this, `picks * weight` could lose integer precision: rebase the credits. */
const REBASE_AT = 2 ** 50;

/** One member of a {@link WeightedCredits}: a bound source, by an id its caller chose. */
class Member implements HeapPlaced {
  readonly id: number;
  readonly weight: number;
  /** Its list position (the tie-break: first in the list wins). */
  rank = 0;
  /** While it is out: its credit. (While in, its stored credit is in its group's heap.) */
  credit: number;
  entered = false;
  heapAt = -1;
  /** Its weight's group, once it has been eligible. */
  group: WeightGroup | undefined = undefined;
  constructor(id: number, weight: number, credit: number) {
    this.id = id;
    this.weight = weight;
    this.credit = credit;
  }
}

/**
 * The eligible members of one weight, as a tracked heap: highest stored credit first (the first
 * key is its negation), then first in the list. While a member is eligible, its credit after `G`
 * picks is its stored value plus `weight * G`, so within a weight the order of credits is the
 * order of stored values, which only the winner's charge changes.
 */
class WeightGroup {
  readonly weight: number;
  readonly heap = new KeyedHeap<Member>({ tracked: true });
  constructor(weight: number) {
    this.weight = weight;
  }
}

/**
 * nginx's smooth weighted round-robin, written once: both the public `pick(list)` and the fast
 * path run it. Every eligible member adds its weight to its credit; the highest credit wins
 * (first in the list on a tie) and is charged the sum of the eligible weights. Ineligible members
 * neither gain credit nor count in the sum, so a source that was empty for a while comes back
 * with the credit it left with: no burst.
 *
 * Without touching every member per pick: every eligible member gains its weight at every pick,
 * so instead of adding it, count the picks (`#picks`) and store, for an eligible member, its
 * credit minus `weight * #picks` (for an ineligible one, its credit). A pick then compares the
 * top of each weight's heap (the members of one weight keep their order between picks) and
 * charges the winner the eligible total: O(distinct weights + log n).
 */
class WeightedCredits {
  #picks = 0;
  /** The sum of the eligible weights. */
  #total = 0;
  #maxWeight = 1;
  /** By id. */
  readonly #members: (Member | undefined)[] = [];
  readonly #groups: WeightGroup[] = [];
  readonly #byWeight = new Map<number, WeightGroup>();

  /** A member joins (not eligible) with `credit`. */
  bind(id: number, weight: number, credit: number): void {
    this.#members[id] = new Member(id, weight, credit);
  }

  /** Member `id` leaves (after {@link leave} if it was eligible). */
  unbind(id: number): void {
    const member = this.#members[id] as Member;
    if (member.entered) this.leave(id);
    this.#members[id] = undefined;
    // The last bound member of its weight takes the weight's group with it: sources that come
    // and go (subscriptions, remote sources) with ever new weights would otherwise leave one
    // group each behind, and every pick compares every group. Kept while any bound member has
    // that weight, so a source going empty and back costs no allocation.
    const weight = member.weight;
    const group = this.#byWeight.get(weight);
    if (group === undefined || group.heap.length > 0) return;
    for (const other of this.#members) if (other !== undefined && other.weight === weight) return;
    this.#byWeight.delete(weight);
    this.#groups.splice(this.#groups.indexOf(group), 1);
  }

  /** Member `id`'s list position, which must keep the order of the others' (see {@link Member.rank}). */
  setRank(id: number, rank: number): void {
    const member = this.#members[id] as Member;
    member.rank = rank;
    if (member.entered) {
      const heap = (member.group as WeightGroup).heap;
      heap.setKeysAt(member.heapAt, heap.firstAt(member.heapAt), rank);
    }
  }

  isEntered(id: number): boolean {
    return (this.#members[id] as Member).entered;
  }

  /** Member `id`'s credit now. */
  credit(id: number): number {
    const member = this.#members[id] as Member;
    if (!member.entered) return member.credit;
    const heap = (member.group as WeightGroup).heap;
    return -heap.firstAt(member.heapAt) + member.weight * this.#picks;
  }

  /** Member `id` becomes eligible. */
  enter(id: number): void {
    const member = this.#members[id] as Member;
    const weight = member.weight;
    this.#total += weight;
    let group = member.group;
    if (group === undefined) {
      group = this.#byWeight.get(weight);
      if (group === undefined) {
        group = new WeightGroup(weight);
        this.#byWeight.set(weight, group);
        this.#groups.push(group);
        if (weight > this.#maxWeight) this.#maxWeight = weight;
      }
      member.group = group;
    }
    member.entered = true;
    group.heap.push(member, -(member.credit - weight * this.#picks), member.rank);
  }

  /** Member `id` stops being eligible. */
  leave(id: number): void {
    const member = this.#members[id] as Member;
    const weight = member.weight;
    const heap = (member.group as WeightGroup).heap;
    member.credit = -heap.firstAt(member.heapAt) + weight * this.#picks;
    heap.removeAt(member.heapAt);
    member.entered = false;
    member.heapAt = -1;
    this.#total -= weight;
  }

  /** The id of the member that wins this pick (one is eligible), charged for it. */
  pick(): number {
    if (this.#picks * this.#maxWeight >= REBASE_AT) this.#rebase();
    const picks = ++this.#picks;
    const groups = this.#groups;
    let best: Member | undefined;
    let bestGroup: WeightGroup | undefined;
    let bestCredit = -Infinity;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g] as WeightGroup;
      const heap = group.heap;
      if (heap.length === 0) continue;
      const credit = -heap.firstAt(1) + group.weight * picks;
      if (credit > bestCredit || (credit === bestCredit && heap.itemAt(1).rank < (best as Member).rank)) {
        best = heap.itemAt(1);
        bestGroup = group;
        bestCredit = credit;
      }
    }
    if (best === undefined) return -1; // unreachable: a pick is asked only when one is eligible
    const heap = (bestGroup as WeightGroup).heap;
    heap.rekeyAt(1, heap.firstAt(1) + this.#total);
    return best.id;
  }

  /** Folds the picks counted so far into the stored credits of the eligible members (their order in a group stays). */
  #rebase(): void {
    const picks = this.#picks;
    for (const group of this.#groups) {
      const heap = group.heap;
      for (let at = 1; at <= heap.length; at++) heap.setKeysAt(at, heap.firstAt(at) - group.weight * picks, heap.secondAt(at));
    }
    this.#picks = 0;
  }
}

class WeightedPicker implements FastPicker {
  // ------------------------------------------------------------ the public pick(list)
  //
  // The credits by list position, brought up to date with the list before each pick: made again
  // (each keeping the credit of its bind order) when the list changed, then each entry's
  // eligibility as its view says.

  /** The bind orders of the views as last seen (see `bindOrderOf`: not the views, which would keep a source that left the list alive). */
  #orders: number[] = [];
  #byPosition = new WeightedCredits();

  pick(list: readonly SourceView[]): SourceView {
    this.#sync(list);
    const credits = this.#byPosition;
    for (let i = 0; i < list.length; i++) {
      const eligible = (list[i] as SourceView).eligible;
      if (eligible !== credits.isEntered(i)) {
        if (eligible) credits.enter(i);
        else credits.leave(i);
      }
    }
    const at = credits.pick();
    return list[at] as SourceView;
  }

  /** Keeps credits attached to their sources when the list changes (a bind or an unsubscribe). */
  #sync(list: readonly SourceView[]): void {
    const orders = this.#orders;
    let same = orders.length === list.length;
    for (let i = 0; same && i < list.length; i++) same = orders[i] === bindOrderOf(list[i] as SourceView);
    if (same) return;
    const old = new Map<number, number>();
    for (let i = 0; i < orders.length; i++) old.set(orders[i] as number, this.#byPosition.credit(i));
    this.#orders = list.map(bindOrderOf);
    const credits = new WeightedCredits();
    for (let i = 0; i < list.length; i++) {
      credits.bind(i, (list[i] as SourceView).weight, old.get(this.#orders[i] as number) ?? 0);
      credits.setRank(i, i);
    }
    this.#byPosition = credits;
  }

  // ------------------------------------------------------------ the fast path (the dispatcher's)
  //
  // The credits by ordinal, kept up to date by the dispatcher's notes: no walk of the list per pick.

  readonly #byOrdinal = new WeightedCredits();
  /** By ordinal: the bound source. */
  readonly #sources: (Lane | undefined)[] = [];

  [BOUND](source: Lane): void {
    this.#byOrdinal.bind(source.ordinal, source.weight, 0);
    this.#sources[source.ordinal] = source;
    this.#rerank();
  }

  [UNBOUND](source: Lane): void {
    this.#sources[source.ordinal] = undefined;
    this.#byOrdinal.unbind(source.ordinal);
    this.#rerank();
  }

  /** Reads every bound source's list position again. Their order does not change, so the heaps stay valid. */
  #rerank(): void {
    const sources = this.#sources;
    for (let ordinal = 0; ordinal < sources.length; ordinal++) {
      const source = sources[ordinal];
      if (source !== undefined) this.#byOrdinal.setRank(ordinal, source.index);
    }
  }

  [ENTERED](source: Lane): void {
    this.#byOrdinal.enter(source.ordinal);
  }

  [LEFT](source: Lane): void {
    this.#byOrdinal.leave(source.ordinal);
  }

  [PICK_ELIGIBLE](_eligible: EligibleSet, _list: readonly Lane[]): Lane {
    return this.#sources[this.#byOrdinal.pick()] as Lane;
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
