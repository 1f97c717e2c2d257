import { bindOrderOf } from './bind-order.js';
import type { Picker, SourceView, Strategy } from './strategy.js';

/**
 * nginx's smooth weighted round-robin. Every eligible source adds its weight to its credit; the
 * highest credit wins (first in the list on a tie) and is charged the sum of the eligible weights.
 * Ineligible sources neither gain credit nor count in the sum, so a source that was empty for a
 * while comes back with the credit it left with: no burst.
 */
class WeightedPicker implements Picker {
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
