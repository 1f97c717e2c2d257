import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { type FastPicker, PICK_ELIGIBLE } from './fast.js';
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

/**
 * {@link pickByLength} over the eligible set: the same walk in list order, skipping the sources
 * that are not eligible without asking each, and reading each length as its view would.
 */
function pickEligibleByLength(eligible: EligibleSet, list: readonly Lane[], sign: 1 | -1): Lane {
  let best: Lane | undefined;
  let bestKey = -Infinity;
  for (let at = eligible.first(); at >= 0; at = eligible.nextFrom(at + 1)) {
    const source = list[at] as Lane;
    const key = sign * source.dueLength;
    if (key > bestKey) {
      best = source;
      bestKey = key;
    }
  }
  return best as Lane;
}

/** A stateless picker by length: one serves every worker. */
function byLength(sign: 1 | -1): Picker {
  const picker: FastPicker = {
    pick: (list: readonly SourceView[]) => pickByLength(list, sign),
    [PICK_ELIGIBLE]: (eligible: EligibleSet, list: readonly Lane[]) => pickEligibleByLength(eligible, list, sign),
  };
  return Object.freeze(picker);
}

const longest = byLength(1);
const shortest = byLength(-1);

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
