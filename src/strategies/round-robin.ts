import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { bindOrderOf } from './bind-order.js';
import { type FastPicker, PICK_ELIGIBLE } from './fast.js';
import type { Picker, SourceView, Strategy } from './strategy.js';

class RoundRobinPicker implements FastPicker {
  /**
   * Where the source served last stood: its index then, and its place in list order (priority
   * number, unranked last, then bind order). Not the view itself: that would keep a subscription
   * alive after it has left the list, with everything it holds.
   */
  #served = false;
  /** -1 when it had left the list already when we heard of it (see `Picker.served`). */
  #lastIndex = -1;
  #lastPriority = Infinity;
  #lastOrder = 0;

  served(view: SourceView): void {
    this.#remember(view);
  }

  pick(list: readonly SourceView[]): SourceView {
    const n = list.length;
    // The turn goes to whoever follows the last-served source now (binding can shift indices).
    // If that source has left the list, the turn goes to the first source ranked after the place
    // it held, even if sources were bound or unbound around it meanwhile.
    let start = 0;
    if (this.#served) {
      const there = this.#lastIndex < 0 ? undefined : list[this.#lastIndex];
      if (there !== undefined && bindOrderOf(there) === this.#lastOrder) start = this.#lastIndex + 1;
      else {
        start = list.findIndex((view) => this.#ranksAfterLast(view));
        if (start < 0) start = 0;
      }
    }
    for (let k = 0; k < n; k++) {
      const view = list[(start + k) % n] as SourceView;
      if (view.eligible) {
        this.#remember(view);
        return view;
      }
    }
    return undefined as never; // unreachable: pick is called only when an entry is eligible
  }

  /** {@link pick} over the eligible set: the first eligible at or after the turn, else the first. */
  [PICK_ELIGIBLE](eligible: EligibleSet, list: readonly Lane[]): Lane {
    let start = 0;
    if (this.#served) {
      const there = this.#lastIndex < 0 ? undefined : list[this.#lastIndex];
      if (there !== undefined && there.bindOrder === this.#lastOrder) start = this.#lastIndex + 1;
      else {
        start = list.findIndex((source) => this.#ranksAfterLast(source.view));
        if (start < 0) start = 0;
      }
    }
    let at = eligible.nextFrom(start);
    if (at < 0) at = eligible.first();
    const source = list[at] as Lane;
    this.#served = true;
    this.#lastIndex = at;
    this.#lastPriority = source.priority ?? Infinity;
    this.#lastOrder = source.bindOrder;
    return source;
  }

  #remember(view: SourceView): void {
    this.#served = true;
    this.#lastIndex = view.index;
    this.#lastPriority = view.priority ?? Infinity;
    this.#lastOrder = bindOrderOf(view);
  }

  /** Whether `view` comes after the last-served source in list order. */
  #ranksAfterLast(view: SourceView): boolean {
    const priority = view.priority ?? Infinity;
    if (priority !== this.#lastPriority) return priority > this.#lastPriority;
    return bindOrderOf(view) > this.#lastOrder;
  }
}

/**
 * One job from each source in turn, in list order. A source that is not eligible when its turn
 * comes is skipped without spending a turn.
 */
export const RoundRobin: Strategy = Object.freeze({
  name: 'RoundRobin',
  create: (): Picker => new RoundRobinPicker(),
});
