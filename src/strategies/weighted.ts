import type { Picker, SourceView, Strategy } from './strategy.js';

/**
 * nginx's smooth weighted round-robin. Every eligible source adds its weight to its credit; the
 * highest credit wins (first in the list on a tie) and is charged the sum of the eligible weights.
 * Ineligible sources neither gain credit nor count in the sum, so a source that was empty for a
 * while comes back with the credit it left with: no burst.
 */
class WeightedPicker implements Picker {
  /** Sources as last seen, and their credits at the same positions. */
  #views: SourceView[] = [];
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
    const views = this.#views;
    let same = views.length === list.length;
    for (let i = 0; same && i < list.length; i++) same = views[i] === list[i];
    if (same) return;
    const old = new Map<SourceView, number>();
    for (let i = 0; i < views.length; i++) old.set(views[i] as SourceView, this.#credits[i] as number);
    this.#views = list.slice();
    this.#credits = list.map((view) => old.get(view) ?? 0);
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
