import type { Picker, SourceView, Strategy } from './strategy.js';

class RoundRobinPicker implements Picker {
  /** The source served last, and where it stood then. */
  #last: SourceView | undefined = undefined;
  #lastIndex = -1;

  pick(list: readonly SourceView[]): SourceView {
    const n = list.length;
    // The turn goes to whoever follows the last-served source now (binding can shift indices).
    // If that source has left the list, the one that took its place is next.
    let start = 0;
    const last = this.#last;
    if (last !== undefined) {
      const at = list[last.index] === last ? last.index : list.indexOf(last);
      start = at >= 0 ? at + 1 : this.#lastIndex;
    }
    for (let k = 0; k < n; k++) {
      const index = (start + k) % n;
      const view = list[index] as SourceView;
      if (view.eligible) {
        this.#last = view;
        this.#lastIndex = index;
        return view;
      }
    }
    return undefined as never; // unreachable: pick is called only when an entry is eligible
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
