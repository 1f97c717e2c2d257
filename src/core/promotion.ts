import type { Clock } from './clock.js';
import { type CoreJob, State } from './job-record.js';
import type { Lane } from './lane.js';

/**
 * Most delayed jobs one {@link Promotion.promote} moves beyond what the due orders need, in the
 * sources that need every due job moved (a priority queue, a keyed queue; the shell's
 * continuation asks for this many per event-loop turn while such a promotion is in progress, and
 * the starts of that turn may move as many again, see {@link Promotion.orderBacklog}).
 * A move costs about a heap pop: 0.6-4 us at a million jobs with the keys in typed arrays on the
 * project's 2-core machine (quiet to heavily loaded), so a step stays well under 10 ms.
 */
export const PROMOTE_STEP = 1024;

/**
 * Most milliseconds one event-loop turn spends moving a step (see {@link PROMOTE_STEP}), on
 * the worker's clock: the step stops early once they are spent. A warm move costs well under a
 * microsecond, so this binds only when the moves are slow: the first burst of a process, whose
 * code is not optimized yet (its first turn took 10-20 ms for 2,048 moves), a loaded machine,
 * records out of cache. A clock that does not move while code runs (a virtual one, fake timers)
 * leaves the count alone to bound a step.
 */
export const PROMOTE_SLICE_MS = 3;

/**
 * Moves between two readings of the clock for {@link PROMOTE_SLICE_MS} (a power of two, less one).
 * The first reading is at a turn's first move: it starts the turn's time (see {@link
 * Promotion.#startSlice}).
 */
const SLICE_CHECK_MASK = 63;

/**
 * How delayed jobs that have come due join their source's due order (part of the core), without
 * moving a million of them in one go.
 *
 * Promoting at `now` makes every delayed job due at `now` due, as SPEC 3 says, but moves only
 * what is needed at once: in each source that has due jobs, the earliest of them when its due
 * order needs it ({@link DueJobs.wantsPromoted}: a FIFO source that holds no promoted job, a
 * priority queue that is empty). The others stay in the delayed heap, due all the same:
 * `DelayedJobs.horizon` says up to when. A FIFO source ({@link DueJobs.needsEveryDue} false)
 * takes them from there one at a time, the next after each start or cancel ({@link topUp}): the
 * heap gives them in due order already, so moving them ahead of their start would only copy a
 * million records into the due order's chunks (young arrays that survive and are promoted: 17 ms
 * scavenges in the issue 13 burst) and spend the pops in steps that block the loop. A source
 * that needs every due job before it gives one (a priority queue, a keyed queue) moves them in
 * bounded steps, one per event-loop turn (the shell's continuation, {@link continuing}), and no
 * job starts while such a source that could give one still holds some ({@link orderBacklog}). So
 * a start picks from what it would have had everything moved, a FIFO source gives the same job,
 * and what a strategy reads is the same.
 *
 * @internal
 */
export class Promotion {
  /** Set by {@link promote} when due jobs were left to move; cleared when a promotion finds none left. */
  pending = false;
  /**
   * Set with {@link pending} when some of those are in a source that needs every due job moved
   * (a priority queue, a keyed queue): the shell moves a step more of them on a later turn
   * ({@link more}). Due jobs left in FIFO sources need no turn of their own.
   */
  continuing = false;
  /**
   * Set by {@link orderBacklog} when a source that needs every due job before it gives one, and
   * that could give one now (below its own concurrency, its rate window open), still holds some
   * of them in its delayed jobs: no job may start until they have moved, since the strategy could
   * pick that source and its next job may be any of them. The shell's continuation moves them, a
   * step per turn. (Read it with {@link continuing}: a later {@link promote} or {@link more}
   * that ends the promotion does not clear it.)
   */
  unordered = false;
  /**
   * How many held due jobs {@link orderBacklog} may still move before the continuation's next
   * turn: a step, given by each turn ({@link more}) and by a promotion that starts one ({@link
   * promote} with a step). Every handler that settles runs a pass of its own, so a budget per
   * call would let a few hundred settles in one turn move a few hundred steps in it.
   */
  #orderBudget = 0;
  /** Told of each source that got due jobs from a {@link promote} or {@link more}: it may have become eligible. */
  readonly #touched: (source: Lane) => void;
  /** Bounds the time a turn's step takes ({@link PROMOTE_SLICE_MS}); without it, the count alone does. */
  readonly #clock: Clock | undefined;
  /** When this turn's time for moving is spent, on {@link #clock}; `NaN` until the turn's first reading. */
  #sliceEnd = Number.NaN;

  constructor(touched: (source: Lane) => void, clock?: Clock) {
    this.#touched = touched;
    this.#clock = clock;
  }

  /**
   * A turn's step begins (a promotion that starts one, or {@link more}). Its time starts at its
   * first reading of the clock, which its first move takes ({@link #sliceSpentAt}): most passes
   * that promote move nothing in a step (a FIFO source's due jobs move at their starts; a
   * worker may hold delayed jobs for later), and read no clock for it.
   */
  #startSlice(): void {
    this.#sliceEnd = Number.NaN;
  }

  /** Whether this turn's time for moving is spent; its first reading starts that time instead. */
  #sliceSpent(): boolean {
    const clock = this.#clock;
    if (clock === undefined) return false;
    const now = clock.now();
    if (Number.isNaN(this.#sliceEnd)) {
      this.#sliceEnd = now + PROMOTE_SLICE_MS;
      return false;
    }
    return now >= this.#sliceEnd;
  }

  /**
   * {@link #sliceSpent}, read at a turn's first move and then once every {@link SLICE_CHECK_MASK}
   * + 1 (`moved`: its moves so far, this one counted): a turn moves at most one job past its time.
   */
  #sliceSpentAt(moved: number): boolean {
    return ((moved - 1) & SLICE_CHECK_MASK) === 0 && this.#sliceSpent();
  }

  /**
   * Promotes every delayed job due at `now` over `list`, moving the ones the due orders need
   * plus, in the sources that need every due job, at most `step` more (`Infinity`: every due
   * job, in every source). Returns how many moved.
   */
  promote(list: readonly Lane[], now: number, step: number): number {
    let budget = step;
    const sliced = step > 0 && step !== Number.POSITIVE_INFINITY;
    if (step > 0) {
      this.#orderBudget = step;
      if (sliced) this.#startSlice();
    }
    let moved = 0;
    let pending = false;
    let continuing = false;
    for (let i = 0; i < list.length; i++) {
      const source = list[i] as Lane;
      const delayed = source.delayed;
      if (delayed.length === 0) continue;
      if (!source.due.needsEveryDue && step !== Infinity) {
        // A FIFO source takes its due jobs from the heap as they start (see topUp).
        if (delayed.nextDueAt() > now) {
          delayed.horizon = -Infinity;
          continue;
        }
        const refilled = refill(source, now);
        if (refilled > 0) {
          moved += refilled;
          this.#touched(source);
        }
        if (delayed.nextDueAt() <= now) {
          delayed.horizon = now;
          pending = true;
        } else delayed.horizon = -Infinity;
        continue;
      }
      const before = moved;
      for (;;) {
        if (delayed.nextDueAt() > now) {
          delayed.horizon = -Infinity;
          break;
        }
        if (budget <= 0 && !source.due.wantsPromoted(delayed.peek() as CoreJob)) {
          delayed.horizon = now;
          pending = true;
          continuing = true;
          break;
        }
        moveOne(source);
        budget--;
        moved++;
        if (sliced && budget > 0 && this.#sliceSpentAt(step - budget)) {
          budget = 0;
          this.#orderBudget = 0; // the starts of this turn move none either
        }
      }
      if (moved > before) this.#touched(source);
    }
    this.pending = pending;
    this.continuing = continuing;
    return moved;
  }

  /**
   * Moves at most `step` more of the due jobs that earlier promotions left in the delayed heaps
   * of the sources that need every due job (only those jobs: what has come due since waits for
   * the next {@link promote}). Returns how many moved.
   */
  more(list: readonly Lane[], step: number): number {
    this.#startSlice();
    const moved = this.#moveHeld(list, step, false, Number.NaN);
    // For the pass that follows in this turn: a step more, unless the slice is spent already.
    this.#orderBudget = this.#sliceSpent() ? 0 : step;
    return moved;
  }

  /**
   * Before a start at `now`: moves what is left of this turn's budget (see {@link #orderBudget})
   * of the due jobs still held in the delayed jobs of the sources that need every due job before
   * they give one (a priority queue, a keyed queue) and could give one now: below their own
   * concurrency, with their rate window open. A source that cannot be picked now does not hold
   * the others up; its order waits for the continuation, or for the start that can pick it. Sets
   * {@link unordered} when some of the pickable ones' are left, and {@link pending} and {@link
   * continuing} as {@link more} does. Returns how many moved.
   *
   * This is what keeps a burst in such a source from blocking the event loop: its first start no
   * longer moves every due job in one go (a million took 240 ms), the starts wait instead while
   * the burst moves a bounded step per turn. Every job it moves is one the start needs moved
   * first, so the sequence of starts is the one of a promotion that moved everything at once.
   */
  orderBacklog(list: readonly Lane[], now: number): number {
    // The turn's time is checked at the first move (see #sliceSpentAt), not before: a call with
    // nothing to move reads no clock.
    return this.#moveHeld(list, this.#orderBudget, true, now);
  }

  /**
   * {@link more} and {@link orderBacklog}: moves at most `budget` held due jobs from the sources
   * that need every due job (only those that could give a job at `now`, when `pickableOnly`;
   * an orderBacklog takes what it moved from this turn's budget), then sets the flags from what
   * is left.
   */
  #moveHeld(list: readonly Lane[], budget: number, pickableOnly: boolean, now: number): number {
    let moved = 0;
    let pending = false;
    let continuing = false;
    let unordered = false;
    for (let i = 0; i < list.length; i++) {
      const source = list[i] as Lane;
      const delayed = source.delayed;
      const horizon = delayed.horizon;
      if (horizon === -Infinity) continue;
      // A FIFO source's due jobs wait in its delayed jobs for their starts (see topUp).
      const needsAll = source.due.needsEveryDue;
      const pickable = needsAll && source.running < source.maxRunning && (source.rate === undefined || !pickableOnly || source.rate.allows(now));
      if (pickableOnly ? pickable : needsAll) {
        const before = moved;
        while (budget > 0 && delayed.nextDueAt() <= horizon) {
          moveOne(source);
          budget--;
          moved++;
          if (budget > 0 && this.#sliceSpentAt(moved)) budget = 0;
        }
        if (moved > before) this.#touched(source);
      }
      if (delayed.nextDueAt() <= horizon) {
        pending = true;
        if (needsAll) continuing = true;
        if (pickable) unordered = true;
      } else delayed.horizon = -Infinity;
    }
    this.pending = pending;
    this.continuing = continuing;
    this.unordered = unordered;
    if (pickableOnly) this.#orderBudget = budget;
    return moved;
  }

  /**
   * After a job left the due order of `source` (it started or was cancelled): moves the next due
   * delayed job if the order needs it now. Returns how many moved (0 or 1).
   */
  topUp(source: Lane): number {
    const delayed = source.delayed;
    if (delayed.horizon === -Infinity) return 0;
    if (delayed.nextDueAt() > delayed.horizon) {
      delayed.horizon = -Infinity;
      return 0;
    }
    return refill(source, delayed.horizon);
  }

  /** Moves every due job `source` still holds in its delayed heap. Returns how many moved. */
  catchUp(source: Lane): number {
    const delayed = source.delayed;
    const horizon = delayed.horizon;
    if (horizon === -Infinity) return 0;
    let moved = 0;
    while (delayed.nextDueAt() <= horizon) {
      moveOne(source);
      moved++;
    }
    delayed.horizon = -Infinity;
    return moved;
  }
}

/**
 * Most due jobs a FIFO source's due order takes from its delayed heap at once, when it holds
 * none of them (see {@link Promotion.topUp}): a few pops in a row keep the heap's upper levels
 * in cache between them, and a due order this short never grows past its first chunks.
 */
export const REFILL = 64;

/**
 * Moves the earliest due jobs of a FIFO `source` (at most {@link REFILL}, due by `upTo`) into
 * its due order if it needs them (`DueJobs.wantsPromoted`); its earliest must be due by `upTo`.
 * Returns how many moved.
 */
function refill(source: Lane, upTo: number): number {
  const delayed = source.delayed;
  if (!source.due.wantsPromoted(delayed.peek() as CoreJob)) return 0;
  let moved = 0;
  do {
    moveOne(source);
    moved++;
  } while (moved < REFILL && delayed.nextDueAt() <= upTo);
  return moved;
}

function moveOne(source: Lane): void {
  const job = source.delayed.shiftDue(Infinity) as CoreJob;
  job.state = State.Due;
  source.due.pushPromoted(job);
}
