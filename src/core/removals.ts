import { releaseId } from './job-ids.js';
import { CancelReason, State, UNTIMED, type CoreJob } from './job-record.js';
import { isTimed } from './sampling.js';
import type { Lane } from './lane.js';
import { Note } from './outbox.js';

import { CoreState } from './core-state.js';

/**
 * The core's transitions that take jobs out before they start (SPEC 5, 9): a job whose signal
 * had aborted at its add, a cancel, a purge, a remote source's lost or handed-back claims.
 *
 * @internal
 */
export abstract class CoreRemovals extends CoreState {
  /** A job whose `signal` had already aborted when it was added: it settles cancelled and never joins its source. */
  cancelAtAdd(job: CoreJob, reason: unknown): void {
    this.added(job.home as Lane);
    this.settleCancelled(job, reason, false);
    this.counters.cancelled++;
    job.home.counters.cancelled++;
    this.outbox.record(Note.Cancelled, job, undefined, 0);
  }

  /**
   * Cancels `job`: a waiting one leaves its source, a running one keeps its slot until its
   * handler settles (the shell aborts its signal). Returns false if it had already settled.
   */
  cancel(job: CoreJob, reason: unknown): boolean {
    const state = job.state;
    if (state >= State.Succeeded) return false;
    const running = state === State.Running;
    this.settleCancelled(job, reason, running);
    const source = job.home as Lane;
    if (running) this.endAttempt(job);
    else if (job.ext?.parked === true) {
      this.giveIdBack(job);
      this.unpark(job); // never joins its source now
      this.shrunk(source);
    } else {
      if (state === State.Delayed) {
        source.delayed.markRemoved();
        this.delayed--;
      } else if (source.keys === undefined) {
        source.due.markRemoved();
        if (source.delayed.horizon !== -Infinity) this.delayed -= this.promotion.topUp(source);
      }
      if (source.keys !== undefined) source.keys.removed(job, state === State.Delayed);
      this.leftQueued(source, job);
      this.shrunk(source);
    }
    if (!running) releaseId(job); // a running one keeps its id until its handler returns
    this.counters.cancelled++;
    source.counters.cancelled++;
    this.outbox.record(Note.Cancelled, job, undefined, running ? 1 : 0);
    return true;
  }

  /**
   * Removes every waiting job of `source` (due, delayed, parked). Every job is settled before any
   * note: a `cancelled` listener that cancels another of them (or purges again) finds it settled.
   */
  purge(source: Lane, key?: string): number {
    const keys = source.keys;
    let jobs: CoreJob[];
    let delayed: CoreJob[];
    if (keys === undefined) {
      jobs = source.due.drain();
      delayed = source.delayed.drain();
    } else {
      ({ due: jobs, delayed } = keys.purge(key));
    }
    this.queued -= jobs.length + delayed.length;
    this.delayed -= delayed.length;
    for (const job of delayed) jobs.push(job);
    if (key === undefined) {
      source.timed = 0;
      source.ages.forgetWaiting();
    } else {
      // One key's jobs (SPEC 10): the other keys' jobs still wait.
      for (const job of jobs) {
        if (job.dueAt !== UNTIMED) source.timed--;
        job.state = State.Cancelled; // before forget, which prunes what has left
      }
      for (const job of jobs) source.ages.forget(job, isTimed(job));
    }
    for (const job of jobs) if (job.ext?.timeout !== undefined) this.timedOutable--;
    const parked = source.parked;
    if (parked !== undefined) {
      for (const job of parked) {
        if (key !== undefined && job.key !== key) continue;
        this.giveIdBack(job);
        this.unpark(job); // never joins now
        jobs.push(job);
      }
    }
    jobs.sort((a, b) => a.seq - b.seq);
    for (const job of jobs) {
      this.settleCancelled(job, undefined, false);
      releaseId(job);
    }
    this.counters.cancelled += jobs.length;
    source.counters.cancelled += jobs.length;
    for (const job of jobs) this.outbox.record(Note.Cancelled, job, undefined, 0);
    this.shrunk(source);
    return jobs.length;
  }

  /**
   * A claimed, unstarted job of a remote source whose claim the engine no longer holds (a lock
   * that lapsed): it leaves like a handed-back job (no note, not counted as cancelled), and is not
   * released either: the engine gives it out again, or has already. Returns whether it left.
   */
  dropClaimed(job: CoreJob): boolean {
    if (job.state !== State.Due) return false;
    const source = job.home as Lane;
    job.state = State.Cancelled;
    job.value = CancelReason.of('its claim was lost');
    source.due.markRemoved();
    this.leftQueued(source, job);
    releaseId(job);
    this.shrunk(source);
    return true;
  }

  /**
   * Takes back every claimed, unstarted job of a remote source (pause, stop, close: SPEC 9) for
   * the shell to release to its engine. They leave without a note and without counting as
   * cancelled: nobody was handed them (no `active`, no handle), and the engine gives them out
   * again.
   */
  handBack(source: Lane): CoreJob[] {
    const jobs = source.due.drain();
    this.queued -= jobs.length;
    source.timed = 0;
    source.ages.forgetWaiting();
    for (const job of jobs) {
      job.state = State.Cancelled;
      job.value = CancelReason.of('handed back to its engine');
    }
    this.shrunk(source);
    return jobs;
  }
}
