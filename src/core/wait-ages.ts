import { AddTicks } from './add-ticks.js';
import { SampledAdds } from './sampled-adds.js';
import type { DueJobs } from './due/due-jobs.js';
import { type CoreJob, State, UNTIMED } from './job-record.js';

/**
 * What one lane remembers of its waiting jobs' add times, for the age of its oldest due job
 * (`stats()`, SPEC 11) without a timestamp on every job: the first job into an empty lane, the
 * sampled jobs' add times (see `isSampled` in `sampling.ts`) and, in a FIFO lane, the time of each
 * tick of adds (the adds of one synchronous run). Written by the core only, as jobs join and
 * leave; `Lane.oldestDueAgeMs` reads it.
 *
 * @internal
 */
export class WaitAges {
  /** The job that joined the lane when it was empty, until it leaves (its add time stays). */
  firstIntoEmpty: CoreJob | undefined = undefined;
  #firstIntoEmptyAt = 0;
  /** The add times of its sampled jobs that wait, off the job records. */
  #sampled: SampledAdds | undefined = undefined;
  /** The tick of adds whose first job here was last noted ({@link noteTick}). */
  tickNoted = 0;
  /** Whether it times its adds by tick: a FIFO lane, whose next job is its oldest (see {@link noteTick}). */
  readonly notesTicks: boolean;
  /** A FIFO lane's add times by tick: its oldest due job's age. */
  #ticks: AddTicks | undefined = undefined;

  constructor(notesTicks: boolean) {
    this.notesTicks = notesTicks;
  }

  /** A job joined the lane when it was empty, at `now`: its add time is kept while it waits. */
  noteFirst(job: CoreJob, now: number): void {
    this.firstIntoEmpty = job;
    this.#firstIntoEmptyAt = now;
  }

  /**
   * `job`, due on add at `now`, is the first this FIFO lane got in tick `tick` of the worker's
   * adds; `oldest` is the lane's next due job (before `job` joined, if any). It gives the age of
   * the oldest due job to the tick whatever the sampling.
   */
  noteTick(job: CoreJob, now: number, tick: number, oldest: CoreJob | undefined): void {
    this.tickNoted = tick;
    (this.#ticks ??= new AddTicks()).note(job.seq, now, oldest === undefined ? job.seq : oldest.seq);
  }

  /** A sampled job joined the lane at `now`: keeps its add time while it waits. */
  noteSampled(job: CoreJob, now: number): void {
    (this.#sampled ??= new SampledAdds()).add(job, now);
  }

  /** The add time of a sampled job that is leaving (starting), or `undefined` if none is kept; forgets it. */
  takeSampled(job: CoreJob): number | undefined {
    const sampled = this.#sampled;
    if (sampled === undefined) return undefined;
    const addedAt = sampled.take(job);
    if (sampled.empty) this.#sampled = undefined;
    return addedAt;
  }

  /** A job left without starting (cancelled): drops its sampled add time and the first-into-empty reference. */
  forget(job: CoreJob, timed: boolean): void {
    if (job === this.firstIntoEmpty) this.firstIntoEmpty = undefined;
    const sampled = this.#sampled;
    if (sampled !== undefined && timed) {
      sampled.take(job);
      if (sampled.empty) this.#sampled = undefined;
    }
  }

  /** Every waiting job left at once (a purge, a hand-back). */
  forgetWaiting(): void {
    this.#sampled = undefined;
    this.#ticks?.clear();
    this.firstIntoEmpty = undefined;
  }

  /**
   * How long the oldest job in `due` has waited at `now`, ms. In a FIFO lane that is its next
   * job, timed from its due time or from the start of its tick of adds, so exact to that tick.
   * Elsewhere, as far as the timed jobs tell: the sampled ones, the first added to an empty lane,
   * and the next job if it carries a due time; failing those, the time since the lane last left
   * empty, an upper bound. `due` holds a job.
   */
  oldestInDue(due: DueJobs, now: number): number {
    // A FIFO lane's next job is its oldest due one: due since its due time, or since its tick
    // of adds began. (A due job still held with the delayed ones may be older: see `Lane.oldestDueAgeMs`.)
    const ticks = this.#ticks;
    if (ticks !== undefined) {
      const next = due.peek() as CoreJob;
      const since = next.dueAt !== UNTIMED ? next.dueAt : ticks.addedBy(next.seq);
      if (since !== undefined) {
        return Math.round((now - since) * 1000) / 1000;
      }
    }
    let age = -1;
    const first = this.firstIntoEmpty;
    if (first !== undefined && first.state === State.Due) age = first.dueAt !== UNTIMED ? now - first.dueAt : now - this.#firstIntoEmptyAt;
    // The sampled job still waiting here that has been due longest.
    if (this.#sampled !== undefined) age = Math.max(age, this.#sampled.oldestDueAge(now));
    // Neither applies: every waiting job came after the lane last left empty, an upper bound
    // (the next job's own age would be a lower one, and may be far off: a young job of a better
    // priority is next, or the first job in was a delayed one that older due ones wait behind).
    if (age < 0) return Math.round((now - this.#firstIntoEmptyAt) * 1000) / 1000;
    const next = due.peek();
    if (next !== undefined && next.dueAt !== UNTIMED) age = Math.max(age, now - next.dueAt);
    return Math.round(age * 1000) / 1000;
  }
}
