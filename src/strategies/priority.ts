import type { Picker, SourceView, Strategy } from './strategy.js';

/**
 * The first eligible source in the list. A busy source ranked first can starve the ones after it:
 * that is the point of strict priority.
 */
export const Priority: Strategy = Object.freeze({
  name: 'Priority',
  create(): Picker {
    return {
      pick(list: readonly SourceView[]): SourceView {
        for (let i = 0; i < list.length; i++) {
          const view = list[i] as SourceView;
          if (view.eligible) return view;
        }
        return undefined as never; // unreachable: pick is called only when an entry is eligible
      },
    };
  },
});
