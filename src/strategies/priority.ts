import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { type FastPicker, PICK_ELIGIBLE } from './fast.js';
import type { Picker, SourceView, Strategy } from './strategy.js';

/**
 * The first eligible source in the list. A busy source ranked first can starve the ones after it:
 * that is the point of strict priority.
 */
export const Priority: Strategy = Object.freeze({
  name: 'Priority',
  create(): Picker {
    const picker: FastPicker = {
      pick(list: readonly SourceView[]): SourceView {
        for (let i = 0; i < list.length; i++) {
          const view = list[i] as SourceView;
          if (view.eligible) return view;
        }
        return undefined as never; // unreachable: pick is called only when an entry is eligible
      },
      [PICK_ELIGIBLE](eligible: EligibleSet, list: readonly Lane[]): Lane {
        return list[eligible.first()] as Lane;
      },
    };
    return picker;
  },
});
