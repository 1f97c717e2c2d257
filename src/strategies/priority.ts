import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { type Candidates, NO_VIEWS, SetCandidates, ViewCandidates } from './candidates.js';
import { type FastPicker, PICK_ELIGIBLE } from '../core/fast-picker.js';
import type { Picker, SourceView, Strategy } from '../api/strategy.js';

/** The strategy, once: the first eligible position (there is one: a pick is asked only then). */
function pickFirst(candidates: Candidates): number {
  return candidates.first();
}

/**
 * The first eligible source in the list. A busy source ranked first can starve the ones after it:
 * that is the point of strict priority.
 */
export const Priority: Strategy = Object.freeze({
  name: 'Priority',
  create(): Picker {
    const views = new ViewCandidates();
    // The worker's own picker: it may keep the worker's list between picks.
    const sources = new SetCandidates();
    const picker: FastPicker = {
      pick(list: readonly SourceView[]): SourceView {
        views.list = list;
        const at = pickFirst(views);
        views.list = NO_VIEWS;
        return list[at] as SourceView;
      },
      [PICK_ELIGIBLE](eligible: EligibleSet, list: readonly Lane[]): Lane {
        sources.eligible = eligible;
        sources.list = list;
        return list[pickFirst(sources)] as Lane;
      },
    };
    return picker;
  },
});
