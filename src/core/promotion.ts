import { type JobRecord, State } from '../job.js';
import type { Source } from '../source.js';

/**
 * Most delayed jobs one {@link Promotion.promote} moves beyond what the due orders need (the
 * shell's continuation asks for this many per event-loop turn while a promotion is in progress).
 * A move costs about a heap pop: 0.6-4 us at a million jobs with the keys in typed arrays on the
 * project's 2-core machine (quiet to heavily loaded), so a batch stays well under 10 ms.
 */
export const PROMOTE_BATCH = 1024;

/**
 * How delayed jobs that have come due join their source's due order (part of the core), without
 * moving a million of them in one go.
 *
 * Promoting at `now` makes every delayed job due at `now` due, as SPEC 3 says, but moves only
 * what is needed at once: in each source that has due jobs, the earliest of them when its due
 * order needs it ({@link DueJobs.wantsPromoted}: a FIFO source that holds no promoted job, a
 * priority queue that is empty), plus a bounded batch. The others stay in the delayed heap, due
 * all the same: `DelayedJobs.horizon` says up to when, and they move as they are needed (one
 * after each start from a FIFO source, all of them before a priority queue gives a job or a
 * strategy reads its length) or in later batches. So a source is eligible exactly when it would
 * be had everything moved, a FIFO source gives the same job, and what a strategy reads is the same.
 *
 * @internal
 */
export class Promotion {
  /** Set by {@link promote} when due jobs were left to move; cleared when a promotion finds none left. */
  pending = false;
  /** Told of each source that got due jobs from a {@link promote} or {@link more}: it may have become eligible. */
  readonly #touched: (source: Source) => void;

  constructor(touched: (source: Source) => void) {
    this.#touched = touched;
  }

  /**
   * Promotes every delayed job due at `now` over `list`, moving the ones the due orders need
   * plus at most `batch` more. Returns how many moved.
   */
  promote(list: readonly Source[], now: number, batch: number): number {
    let budget = batch;
    let moved = 0;
    let pending = false;
    for (let i = 0; i < list.length; i++) {
      const source = list[i] as Source;
      const delayed = source.delayed;
      if (delayed.length === 0) continue;
      const before = moved;
      for (;;) {
        if (delayed.nextDueAt() > now) {
          delayed.horizon = -Infinity;
          break;
        }
        if (budget <= 0 && !source.due.wantsPromoted()) {
          delayed.horizon = now;
          pending = true;
          break;
        }
        moveOne(source);
        budget--;
        moved++;
      }
      if (moved > before) this.#touched(source);
    }
    this.pending = pending;
    return moved;
  }

  /**
   * Moves at most `batch` more of the due jobs that earlier promotions left in the delayed heaps
   * (only those: what has come due since waits for the next {@link promote}). Returns how many moved.
   */
  more(list: readonly Source[], batch: number): number {
    let budget = batch;
    let moved = 0;
    let pending = false;
    for (let i = 0; i < list.length; i++) {
      const source = list[i] as Source;
      const delayed = source.delayed;
      const horizon = delayed.horizon;
      if (horizon === -Infinity) continue;
      const before = moved;
      while (budget > 0 && delayed.nextDueAt() <= horizon) {
        moveOne(source);
        budget--;
        moved++;
      }
      if (moved > before) this.#touched(source);
      if (delayed.nextDueAt() <= horizon) pending = true;
      else delayed.horizon = -Infinity;
    }
    this.pending = pending;
    return moved;
  }

  /**
   * After a job left the due order of `source` (it started or was cancelled): moves the next due
   * delayed job if the order needs it now. Returns how many moved (0 or 1).
   */
  topUp(source: Source): number {
    const delayed = source.delayed;
    if (delayed.horizon === -Infinity || !source.due.wantsPromoted()) return 0;
    if (delayed.nextDueAt() > delayed.horizon) {
      delayed.horizon = -Infinity;
      return 0;
    }
    moveOne(source);
    return 1;
  }

  /** Moves every due job `source` still holds in its delayed heap. Returns how many moved. */
  catchUp(source: Source): number {
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

function moveOne(source: Source): void {
  const job = source.delayed.shiftDue(Infinity) as JobRecord;
  job.state = State.Waiting;
  source.due.pushPromoted(job);
}
