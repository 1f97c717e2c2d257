import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { bindOrderOf } from './bind-order.js';
import { type Candidates, NO_VIEWS, SetCandidates, ViewCandidates } from './candidates.js';
import { type FastPicker, PICK_ELIGIBLE } from '../core/fast-picker.js';
import type { Picker, SourceView, Strategy } from '../api/strategy.js';

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
  readonly #views = new ViewCandidates();
  /** The worker's own picker: it may keep the worker's list between picks. */
  readonly #sources = new SetCandidates();

  served(view: SourceView): void {
    this.#remember(view.index, view.priority ?? Infinity, bindOrderOf(view));
  }

  pick(list: readonly SourceView[]): SourceView {
    const views = this.#views;
    views.list = list;
    const at = this.#pick(views);
    views.list = NO_VIEWS;
    return list[at] as SourceView;
  }

  [PICK_ELIGIBLE](eligible: EligibleSet, list: readonly Lane[]): Lane {
    const sources = this.#sources;
    sources.eligible = eligible;
    sources.list = list;
    return list[this.#pick(sources)] as Lane;
  }

  /** The strategy, once: the first eligible position at or after the turn, else the first. */
  #pick(candidates: Candidates): number {
    // The turn goes to whoever follows the last-served source now (binding can shift indices).
    // If that source has left the list, the turn goes to the first source ranked after the place
    // it held, even if sources were bound or unbound around it meanwhile.
    let start = 0;
    if (this.#served) {
      const last = this.#lastIndex;
      if (last >= 0 && last < candidates.size && candidates.order(last) === this.#lastOrder) start = last + 1;
      else start = this.#firstAfterLast(candidates);
    }
    let at = candidates.nextFrom(start);
    if (at < 0) at = candidates.first();
    if (at < 0) return -1; // unreachable: a pick is asked only when an entry is eligible
    this.#remember(at, candidates.rank(at), candidates.order(at));
    return at;
  }

  #remember(index: number, priority: number, order: number): void {
    this.#served = true;
    this.#lastIndex = index;
    this.#lastPriority = priority;
    this.#lastOrder = order;
  }

  /** The first position that comes after the last-served source in list order, or 0. */
  #firstAfterLast(candidates: Candidates): number {
    for (let at = 0; at < candidates.size; at++) {
      const priority = candidates.rank(at);
      if (priority !== this.#lastPriority ? priority > this.#lastPriority : candidates.order(at) > this.#lastOrder) return at;
    }
    return 0;
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
