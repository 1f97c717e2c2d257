/**
 * A read-only view of one bound source, as a strategy sees it. The list a strategy gets holds one
 * per source, in list order (priority number, then bind order). Values are read live.
 */
export interface SourceView {
  /** The source's name. */
  readonly name: string;
  /** Its position in the list (0 is first). */
  readonly index: number;
  /** Its priority number, or `undefined` when bound without one (it then ranks after every ranked source). */
  readonly priority: number | undefined;
  /** Its weight (>= 1), used by `Strategy.Weighted`. */
  readonly weight: number;
  /** How many *due* jobs wait in it (delayed ones are not counted). */
  readonly length: number;
  /** How many of its jobs are running. */
  readonly running: number;
  /** Whether it may give a job now: a due job waits, and its own concurrency and rate limit allow a start. */
  readonly eligible: boolean;
}

/**
 * Chooses the source of the next job. One picker exists per worker, so it may keep state (turns,
 * credits) between calls.
 */
export interface Picker {
  /**
   * Called for every job the worker starts when two or more sources are bound, only when at least
   * one entry is eligible. Must return one of the eligible entries of `list`; anything else
   * (`undefined`, an ineligible or foreign entry, a throw) halts the worker with an `InvariantError`.
   */
  pick(list: readonly SourceView[]): SourceView;
  /**
   * Optional. With one source bound the worker starts jobs without calling {@link Picker.pick}.
   * Before the next `pick` after such starts, it calls `served` with the source of the last of
   * them (which may have left the list since), so a picker that keeps turns knows who was served
   * last. A throw halts the worker like a throw from `pick`.
   */
  served?(view: SourceView): void;
}

/**
 * A dispatch strategy: a name and a factory of pickers. The built-ins are on {@link Strategy};
 * a custom one is a plain object.
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
 * The public name is the `Strategy` type of `strategies/index.ts`, which is documented in its
 * place; the API docs inline this interface where other types refer to it.
 *
 * @inline
 */
export interface Strategy {
  /** Shown in errors and the demo. */
  readonly name: string;
  /** Makes the picker of one worker. */
  create(): Picker;
}
