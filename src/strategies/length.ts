import type { Picker, SourceView, Strategy } from './strategy.js';

/**
 * The eligible entry with the highest `sign * length` (sign 1: longest, -1: shortest); the strict
 * comparison gives ties to the first in the list.
 */
function pickByLength(list: readonly SourceView[], sign: 1 | -1): SourceView {
  let best: SourceView | undefined;
  let bestKey = -Infinity;
  for (let i = 0; i < list.length; i++) {
    const view = list[i] as SourceView;
    if (!view.eligible) continue;
    const key = sign * view.length;
    if (key > bestKey) {
      best = view;
      bestKey = key;
    }
  }
  return best as SourceView;
}

const longest: Picker = Object.freeze({ pick: (list: readonly SourceView[]) => pickByLength(list, 1) });
const shortest: Picker = Object.freeze({ pick: (list: readonly SourceView[]) => pickByLength(list, -1) });

/**
 * The eligible source with the most due jobs waiting; ties go to the first in the list. The
 * longest sources are worked down together.
 */
export const MaxLen: Strategy = Object.freeze({
  name: 'MaxLen',
  // Stateless, so every worker can share one picker.
  create: (): Picker => longest,
});

/**
 * The eligible source with the fewest due jobs waiting (empty ones are never eligible); ties go
 * to the first in the list. Short sources are run to empty first.
 */
export const MinLen: Strategy = Object.freeze({
  name: 'MinLen',
  create: (): Picker => shortest,
});
