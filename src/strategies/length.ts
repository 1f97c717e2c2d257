import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { type Candidates, NO_LANES, NO_VIEWS, SetCandidates, ViewCandidates } from './candidates.js';
import { type FastPicker, PICK_ELIGIBLE } from '../core/fast-picker.js';
import type { Picker, SourceView, Strategy } from '../api/strategy.js';

/**
 * The strategy, once: the eligible position with the highest `sign * length` (sign 1: longest,
 * -1: shortest), walked in list order; the strict comparison gives ties to the first in the list.
 */
function pickByLength(candidates: Candidates, sign: 1 | -1): number {
  let best = -1;
  let bestKey = -Infinity;
  for (let at = candidates.first(); at >= 0; at = candidates.nextFrom(at + 1)) {
    const key = sign * candidates.length(at);
    if (key > bestKey) {
      best = at;
      bestKey = key;
    }
  }
  return best;
}

/**
 * A stateless picker by length: one serves every worker. A pick runs to its end without calling
 * out to anything that could pick again, so the two candidate holders are shared too; each lets
 * go of its list when the pick is done.
 */
function byLength(sign: 1 | -1): Picker {
  const views = new ViewCandidates();
  const sources = new SetCandidates();
  const picker: FastPicker = {
    pick(list: readonly SourceView[]): SourceView {
      views.list = list;
      const at = pickByLength(views, sign);
      views.list = NO_VIEWS;
      return list[at] as SourceView;
    },
    [PICK_ELIGIBLE](eligible: EligibleSet, list: readonly Lane[]): Lane {
      sources.eligible = eligible;
      sources.list = list;
      const at = pickByLength(sources, sign);
      sources.eligible = undefined;
      sources.list = NO_LANES;
      return list[at] as Lane;
    },
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
