import type { Picker, SourceView, Strategy } from './strategy.js';

class RoundRobinPicker implements Picker {
  /** The source served last; its current index says where the next turn starts. */
  #last: SourceView | undefined = undefined;

  pick(list: readonly SourceView[]): SourceView {
    const n = list.length;
    // Find where the last-served source is now (binding can shift indices); start after it.
    let start = 0;
    const last = this.#last;
    if (last !== undefined) {
      const at = list[last.index] === last ? last.index : list.indexOf(last);
      start = at < 0 ? 0 : at + 1;
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
