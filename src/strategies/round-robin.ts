import { sourceOfView } from '../source.js';
import type { Picker, SourceView, Strategy } from './strategy.js';

/** Whether `view` comes after `than` in list order: priority number (unranked last), then bind order. */
function ranksAfter(view: SourceView, than: SourceView): boolean {
  const mine = view.priority ?? Infinity;
  const theirs = than.priority ?? Infinity;
  if (mine !== theirs) return mine > theirs;
  return (sourceOfView(view)?.bindOrder ?? 0) > (sourceOfView(than)?.bindOrder ?? 0);
}

class RoundRobinPicker implements Picker {
  /** The source served last. */
  #last: SourceView | undefined = undefined;

  served(view: SourceView): void {
    this.#last = view;
  }

  pick(list: readonly SourceView[]): SourceView {
    const n = list.length;
    // The turn goes to whoever follows the last-served source now (binding can shift indices).
    // If that source has left the list, the turn goes to the first source ranked after the place
    // it held, even if sources were bound or unbound around it meanwhile.
    let start = 0;
    const last = this.#last;
    if (last !== undefined) {
      const at = list[last.index] === last ? last.index : list.indexOf(last);
      if (at >= 0) start = at + 1;
      else {
        start = list.findIndex((view) => ranksAfter(view, last));
        if (start < 0) start = 0;
      }
    }
    for (let k = 0; k < n; k++) {
      const view = list[(start + k) % n] as SourceView;
      if (view.eligible) {
        this.#last = view;
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
