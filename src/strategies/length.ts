import type { Picker, SourceView, Strategy } from './strategy.js';

/**
 * The eligible source with the most due jobs waiting; ties go to the first in the list. The
 * longest sources are worked down together.
 */
export const MaxLen: Strategy = Object.freeze({
  name: 'MaxLen',
  create(): Picker {
    return {
      pick(list: readonly SourceView[]): SourceView {
        let best: SourceView | undefined;
        let bestLength = -1;
        for (let i = 0; i < list.length; i++) {
          const view = list[i] as SourceView;
          if (!view.eligible) continue;
          const length = view.length;
          if (length > bestLength) {
            best = view;
            bestLength = length;
          }
        }
        return best as SourceView;
      },
    };
  },
});

/**
 * The eligible source with the fewest due jobs waiting (empty ones are never eligible); ties go
 * to the first in the list. Short sources are run to empty first.
 */
export const MinLen: Strategy = Object.freeze({
  name: 'MinLen',
  create(): Picker {
    return {
      pick(list: readonly SourceView[]): SourceView {
        let best: SourceView | undefined;
        let bestLength = Infinity;
        for (let i = 0; i < list.length; i++) {
          const view = list[i] as SourceView;
          if (!view.eligible) continue;
          const length = view.length;
          if (length < bestLength) {
            best = view;
            bestLength = length;
          }
        }
        return best as SourceView;
      },
    };
  },
});
