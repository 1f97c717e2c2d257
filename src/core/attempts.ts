import { InvariantError, type TimeoutError } from '../api/errors.js';
import { releaseId } from './job-ids.js';
import { Deadline, State, STATUS, UNTIMED, type CoreJob } from './job-record.js';
import type { JobProgress } from '../api/jobs.js';
import type { Lane } from './lane.js';
import { Note } from './outbox.js';
import { Phase } from './worker-state.js';

import { CoreRemovals } from './removals.js';
import type { Origin, RemoteCoreJob } from './core-state.js';

/**
 * The core's transitions of an attempt (SPEC 6): a start (the strategy picks, a slot is taken,
 * a deadline set), a success, a failure (retried, dead-lettered, or the engine's for a remote
 * job), a timeout, a progress report, and the release of the slot once the handler settles.
 *
 * @internal
 */
export abstract class CoreAttempts extends CoreRemovals {
  /**
   * One start: the job the strategy chooses at `now`, marked running, with a slot taken and its
   * deadline set, and a {@link Note.Started} for the shell to run it; or `undefined` when jobs
   * may not start, no slot is free or no source is eligible.
   */
  next(now: number): CoreJob | undefined {
    if (this.currentPhase !== Phase.Started || this.slotsInUse >= this.concurrency) return undefined;
    if (this.promotion.continuing) {
      // A burst of due jobs is still moving into a source that needs them all before it gives
      // one: this start waits until they have (a step per turn, see `Promotion.orderBacklog`).
      this.delayed -= this.promotion.orderBacklog(this.dispatcher.list, now);
      if (this.promotion.unordered) return undefined;
    }
    const source = this.dispatcher.choose(now);
    if (source === undefined) return undefined;
    // The strategy is user code: it may have paused or stopped the worker, or lowered the
    // concurrency, and then this start must not happen.
    if (this.currentPhase !== Phase.Started || this.slotsInUse >= this.concurrency) return undefined;
    // A priority queue's next job may be any of its due ones: those still in the delayed jobs
    // move first (none by now: `orderBacklog` moved them, this is the rule it keeps).
    if (source.due.needsEveryDue && source.delayed.horizon !== -Infinity) this.catchUp(source);
    const keys = source.keys;
    const job = (keys === undefined ? source.due.shift() : keys.take(now)) as CoreJob;
    if (source.delayed.horizon !== -Infinity) this.delayed -= this.promotion.topUp(source);
    if (!job.claim()) {
      throw new InvariantError(
        'attempt-starts-once',
        `job ${job.id} of source "${source.name}" was taken while ${STATUS[job.state]}${job.inFlight ? ' and in flight' : ''}`,
      );
    }
    if (job === source.ages.firstIntoEmpty) source.ages.firstIntoEmpty = undefined; // only its add time is needed now
    source.running++;
    this.queued--;
    if (job.dueAt !== UNTIMED) source.timed--;
    if (source.rate !== undefined) source.rate.record(now);
    this.dispatcher.touch(source);
    this.slotsInUse++;
    this.counters.started++;
    source.counters.started++;
    const own = job.ext?.timeout;
    if (own !== undefined) this.timedOutable--;
    const timeout = own ?? this.defaultTimeout;
    if (timeout !== undefined) {
      const deadline = new Deadline(now + timeout, job, timeout);
      job.extras().deadline = deadline;
      this.deadlines.add(deadline);
    }
    this.outbox.record(Note.Started, job, undefined, 0);
    if (source.sizeWatched) this.outbox.record(Note.Shrunk, undefined, source, 0);
    return job;
  }

  /**
   * Whether a failure of `job`'s attempt needs a retry verdict from the shell: the job is still
   * running as far as its handle knows, and no timeout has already decided for this attempt.
   */
  needsVerdict(job: CoreJob): boolean {
    // A remote job's engine owns its retries (SPEC 9): the worker's retry hooks are not asked.
    return job.state === State.Running && job.ext?.attemptFailed !== true && !job.home.isRemote;
  }

  /**
   * Whether {@link succeed} or {@link fail} of `job` needs the time: a retry after a timeout or
   * a parked redrive let in, both in the job's extras. Without them the shell need not read the clock.
   */
  finishNeedsTime(job: CoreJob): boolean {
    return job.ext !== undefined;
  }

  /**
   * The handler of `job` returned `value` at `now` ({@link UNTIMED} when
   * {@link finishNeedsTime} says no). If the job still runs it succeeds ({@link Note.Succeeded});
   * otherwise (cancelled, or failed or retried by a timeout) the notes say what happened. Returns
   * whether it succeeded now.
   */
  succeed(job: CoreJob, value: unknown, now: number): boolean {
    if (job.ext === undefined && job.runningInFlight) {
      // The common case: no deadline, no timed-out attempt, no parked successor. It succeeds with
      // one write of its packed state, and its slot is freed.
      job.succeedInFlight();
      job.value = value;
      this.counters.succeeded++;
      const source = job.home as Lane;
      source.counters.succeeded++;
      this.outbox.record(Note.Succeeded, job, undefined, 0);
      this.freeSlot(source);
      if (source.keys !== undefined) source.keys.finished(job);
      if (!source.inEligible || source.keys !== undefined) this.dispatcher.touch(source);
      if (source.retiring) this.retireIfEmpty(source);
      return true;
    }
    this.endAttempt(job);
    let completed = false;
    if (job.state === State.Running) {
      if (job.ext?.attemptFailed === true) this.#retryAfterTimeout(job, now);
      else {
        job.state = State.Succeeded;
        job.value = value;
        this.counters.succeeded++;
        job.home.counters.succeeded++;
        this.outbox.record(Note.Succeeded, job, undefined, 0);
        completed = true;
      }
    }
    this.#release(job, now);
    return completed;
  }

  /**
   * The handler of `job` threw or rejected with `error`; `delay` is the shell's retry verdict
   * (from {@link retryDelay}): the wait before the next attempt, or -1 to fail for good.
   * `wallNow` (epoch ms) dates a dead letter.
   */
  fail(job: CoreJob, error: unknown, delay: number, now: number, wallNow: number): void {
    this.endAttempt(job);
    if (job.state === State.Running) {
      if (job.ext?.attemptFailed === true) this.#retryAfterTimeout(job, now);
      else if (delay >= 0) this.#retry(job, error, delay, now);
      else this.#failForGood(job, error, wallNow);
    }
    this.#release(job, now);
  }

  /**
   * The attempt of `deadline` ran past its timeout with `error`. `delay` is the retry verdict;
   * a retry is scheduled only once the handler settles (a job never has two attempts in
   * flight), a final failure settles the job now. Either way its slot stays taken.
   */
  timeOut(deadline: Deadline, error: TimeoutError, delay: number, wallNow: number): void {
    this.deadlines.remove(deadline);
    const job = deadline.job;
    const ext = job.extras();
    if (ext.deadline === deadline) ext.deadline = undefined;
    if (job.state !== State.Running || !job.inFlight) return;
    this.outbox.record(Note.TimedOut, job, error, 0);
    if (delay >= 0) {
      ext.attemptFailed = true;
      ext.attemptError = error;
      ext.retryDelay = delay;
    } else {
      this.#failForGood(job, error, wallNow);
    }
  }

  #retryAfterTimeout(job: CoreJob, now: number): void {
    const ext = job.extras();
    this.#retry(job, ext.attemptError, ext.retryDelay, now);
  }

  /** Puts the job back as a delayed job of its own source, even at capacity or closed: it is not a new job. */
  #retry(job: CoreJob, error: unknown, delay: number, now: number): void {
    const source = job.home as Lane;
    job.state = State.Delayed;
    job.dueAt = now + delay;
    // Not due before a promotion sees it: jobs up to the horizon of a promotion in progress count as due.
    if (job.dueAt <= source.delayed.horizon) this.catchUp(source);
    source.delayed.push(job);
    source.timed++;
    if (job.ext?.timeout !== undefined) this.timedOutable++;
    this.queued++;
    this.delayed++;
    this.counters.retried++;
    source.counters.retried++;
    this.dispatcher.touch(source);
    this.outbox.record(Note.Retrying, job, error, delay);
  }

  #failForGood(job: CoreJob, error: unknown, wallNow: number): void {
    job.state = State.Failed;
    job.value = error;
    const source = job.home as Lane;
    if (source.isRemote) {
      this.#failRemote(job as RemoteCoreJob, error);
      return;
    }
    this.counters.failed++;
    source.counters.failed++;
    const origin: Origin = { job, source, priority: job.priority };
    const entry: { id: string; data: unknown; source: string; error: unknown; attempts: number; failedAt: Date; key?: string } = {
      id: job.id,
      data: job.data,
      source: source.name,
      error,
      attempts: job.attempts,
      failedAt: new Date(wallNow),
    };
    if (job.key !== undefined) entry.key = job.key;
    const kept = this.deadLetters.add(entry, origin);
    if (kept) {
      this.counters.dead++;
      source.counters.dead++;
    }
    this.outbox.record(Note.Failed, job, error, kept ? 1 : 0);
  }

  /**
   * A remote job's attempt failed: its local record settles failed, never as a dead letter (the
   * engine keeps failed jobs). Whether the engine runs the job again decides between `retrying`
   * and `failed` (SPEC 9).
   */
  #failRemote(job: RemoteCoreJob, error: unknown): void {
    if (job.engineRetries) {
      this.counters.retried++;
      job.home.counters.retried++;
      this.outbox.record(Note.RemoteRetrying, job, error, 0);
    } else {
      this.counters.failed++;
      job.home.counters.failed++;
      this.outbox.record(Note.Failed, job, error, 0);
    }
  }

  /** Frees the slot of a job whose handler has settled, and lets in a redrive parked behind it. */
  #release(job: CoreJob, now: number): void {
    if (!job.inFlight) throw new InvariantError('slot-released-once', `job ${job.id} released a slot it did not hold`);
    job.inFlight = false;
    const source = job.home as Lane;
    this.freeSlot(source);
    const ext = job.ext;
    if (ext !== undefined) {
      if (job.state >= State.Succeeded) releaseId(job); // settled, and now no attempt runs
      const successor = ext.successor;
      if (successor !== undefined) {
        ext.successor = undefined;
        this.admitParked(successor, now);
      }
    }
    // After the parked successor joined: its key (the same) stays active instead of being forgotten.
    if (source.keys !== undefined) source.keys.finished(job);
    // A finish can only make a plain source eligible (one fewer running); a keyed one is asked anyway.
    if (!source.inEligible || source.keys !== undefined) this.dispatcher.touch(source);
    if (source.retiring) this.retireIfEmpty(source);
  }

  /**
   * The handler of `job` reported `value`: recorded as the job's latest progress if an attempt of
   * it is running and it has not settled. Returns whether it was (the shell then emits
   * `progress`); a late report changes nothing, and neither does one from an attempt that has
   * timed out and whose handler still runs before the retry (it is between two attempts).
   */
  progress(job: CoreJob, value: JobProgress): boolean {
    if (job.state !== State.Running || !job.inFlight || job.ext?.attemptFailed === true) return false;
    job.extras().progress = value;
    return true;
  }
}
