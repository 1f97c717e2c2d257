import type { EligibleSet } from './eligible-set.js';
import type { Lane } from './lane.js';
import type { Picker } from '../api/strategy.js';

/**
 * The built-in strategies' fast interface. The dispatcher keeps the eligible sources in an
 * {@link EligibleSet} by list position; a picker with {@link PICK_ELIGIBLE} picks from that set
 * instead of walking every view of the list, and hears (through {@link ENTERED} and
 * {@link LEFT}) when a source joins or leaves it. It picks exactly what its public `pick` would
 * pick from the same state (SPEC 4), because both run the same code: each built-in strategy is
 * written once, over `Candidates` (see `candidates.ts`), or for `Weighted` over its credits. The
 * public contract stays for custom strategies and for whoever calls a built-in picker directly.
 *
 * Symbols, so that a custom picker cannot have such a method by chance.
 *
 * @internal
 */
export const PICK_ELIGIBLE: unique symbol = Symbol('qmux.pickEligible');
/** @internal A source was bound (its `ordinal` is its own from now on; the list is renumbered): forget what that ordinal held. */
export const BOUND: unique symbol = Symbol('qmux.bound');
/** @internal A source left the list (after {@link LEFT} if it was eligible; the list is renumbered, its ordinal not yet free): let go of it. */
export const UNBOUND: unique symbol = Symbol('qmux.unbound');
/** @internal A source joined the eligible set. */
export const ENTERED: unique symbol = Symbol('qmux.entered');
/** @internal A source left the eligible set (or the list, while eligible). */
export const LEFT: unique symbol = Symbol('qmux.left');

/** @internal */
export interface FastPicker extends Picker {
  /** The source of the next job; `eligible` holds at least one position of `list`. */
  [PICK_ELIGIBLE](eligible: EligibleSet, list: readonly Lane[]): Lane;
  [BOUND]?(source: Lane): void;
  [UNBOUND]?(source: Lane): void;
  [ENTERED]?(source: Lane): void;
  [LEFT]?(source: Lane): void;
}

/** @internal The picker's fast interface, if it has one. */
export function fastPickerOf(picker: Picker): FastPicker | undefined {
  return typeof (picker as Partial<FastPicker>)[PICK_ELIGIBLE] === 'function' ? (picker as FastPicker) : undefined;
}
