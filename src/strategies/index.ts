import { MaxLen, MinLen } from './length.js';
import { Priority } from './priority.js';
import { RoundRobin } from './round-robin.js';
import type { Strategy as StrategyType } from '../api/strategy.js';
import { Weighted } from './weighted.js';
import { describeValue } from '../internal/validate.js';

export type { Picker, SourceView } from '../api/strategy.js';

/**
 * A dispatch strategy: a name and a factory of pickers, one {@link Picker} per worker. The
 * built-ins are on the `Strategy` value; a custom one is a plain object.
 *
 * @example
 * ```ts
 * // Serve the eligible source with the fewest jobs running: a "least busy" strategy.
 * const LeastBusy: Strategy = {
 *   name: 'LeastBusy',
 *   create: () => ({
 *     pick: (list) => list.filter((s) => s.eligible).sort((a, b) => a.running - b.running)[0]!,
 *   }),
 * };
 * new Worker(handler, { strategy: LeastBusy });
 * ```
 *
 * @interface
 */
export type Strategy = StrategyType;

/**
 * The built-in strategies. Pass one as the `strategy` worker option.
 *
 * | strategy | takes the next job from | ties |
 * |---|---|---|
 * | `Priority` (default) | the first eligible source in the list | - |
 * | `RoundRobin` | the next eligible source in turn after the last one served | - |
 * | `MaxLen` | the eligible source with the most due jobs | first in the list |
 * | `MinLen` | the eligible source with the fewest due jobs | first in the list |
 * | `Weighted` | smooth weighted round-robin by `weight` | first in the list |
 *
 * @example
 * ```ts
 * const worker = new Worker(handler, { strategy: Strategy.RoundRobin });
 * ```
 */
export const Strategy: BuiltInStrategies = Object.freeze({ Priority, RoundRobin, MaxLen, MinLen, Weighted });

/** The built-in strategies, as found on {@link Strategy}. */
export interface BuiltInStrategies {
  /**
   * The first eligible source in the list (priority number, then bind order). The default. A
   * busy source ranked first can starve the ones after it: that is the point of strict priority.
   */
  readonly Priority: StrategyType;
  /**
   * One job from each eligible source in turn, in list order, starting after the source served
   * last. A source that is not eligible when its turn comes is skipped without spending a turn.
   */
  readonly RoundRobin: StrategyType;
  /** The eligible source with the most due jobs; ties go to the first in the list. */
  readonly MaxLen: StrategyType;
  /** The eligible source with the fewest due jobs; ties go to the first in the list. */
  readonly MinLen: StrategyType;
  /**
   * Smooth weighted round-robin over the eligible sources by their `weight` bind option: over
   * any run, each takes its share of starts (weights 6:3:1 give `ABAABACABA`); ties go to the
   * first in the list.
   */
  readonly Weighted: StrategyType;
}

let defaultStrategy: StrategyType = Priority;

/** @internal Checks that `value` is a strategy object, naming `option` otherwise. */
export function assertStrategy(option: string, value: unknown): asserts value is StrategyType {
  const candidate = value as { name?: unknown; create?: unknown } | null;
  if (candidate === null || typeof candidate !== 'object' || typeof candidate.name !== 'string' || typeof candidate.create !== 'function') {
    throw new TypeError(
      `qmux: ${option} must be one of Strategy.Priority, Strategy.RoundRobin, Strategy.MaxLen, ` +
        `Strategy.MinLen, Strategy.Weighted, or an object { name: string, create(): Picker }; got ${describeValue(value)}`,
    );
  }
}

/**
 * Changes the strategy of workers created after the call (without a `strategy` option).
 * Workers that exist keep theirs.
 *
 * @example
 * ```ts
 * setDefaultStrategy(Strategy.RoundRobin);
 * ```
 */
export function setDefaultStrategy(strategy: StrategyType): void {
  assertStrategy('setDefaultStrategy(strategy)', strategy);
  defaultStrategy = strategy;
}

/** @internal The strategy a worker created now gets when it names none. */
export function currentDefaultStrategy(): StrategyType {
  return defaultStrategy;
}
