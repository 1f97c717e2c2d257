import type { Clock } from './clock.js';
import { DeadLetterStore } from './dead-letters.js';
import { CancelledError, InvariantError } from '../api/errors.js';
import { claimId, releaseId } from './job-ids.js';
import { CancelReason, State, UNTIMED, type CoreJob, type JobExtras } from './job-record.js';
import { isTimed, Timed } from './sampling.js';
import type { Lane } from './lane.js';
import type { Picker } from '../api/strategy.js';
import type { WorkerCounters } from '../api/stats.js';
import { zeroCounters } from './counters.js';
import { Deadlines } from './deadlines.js';
import { Dispatcher } from './dispatcher.js';
import { Note, Outbox } from './outbox.js';
import { PROMOTE_STEP, Promotion } from './promotion.js';
import { Phase, statusOf, type WorkerStatus } from './worker-state.js';

/** What {@link Core} is made with. @internal */
export interface CoreConfig {
  concurrency: number;
  picker: Picker;
  strategyName: string;
  /** The worker's `timeout` option. */
  timeout: number | undefined;
  deadLetterLimit: number;
  autoRun: boolean;
  /** Most delayed jobs a promotion moves beyond what the due orders need (default {@link PROMOTE_STEP}). */
  promoteStep?: number;
  /**
   * The worker's clock, read only to stop a turn's step of promotion moves once it has taken
   * `PROMOTE_SLICE_MS` (see `promotion.ts`): it decides how much of a burst moves per turn, never
   * what starts or when a job is due (those times are given to each transition). Without it, the
   * count alone bounds a step (the simulator).
   */
  workClock?: Clock;
}

/**
 * A job of a remote source as the core sees it: the shell's `RemoteJobRecord`, which the shell
 * tells, before a failing attempt's transition, whether the engine runs the job again.
 *
 * @internal
 */
export interface RemoteCoreJob extends CoreJob {
  readonly engineRetries: boolean;
}

/** What `redrive` needs to put a dead letter back. @internal */
export interface Origin {
  job: CoreJob;
  source: Lane;
  priority: number;
}

/**
 * What every transition of the core reads and writes (SPEC 12): the worker's counters, phase,
 * slots, deadlines, dead letters and notes, and the steps that several transitions share (a job
 * joining its lane, a slot freed, a job settled cancelled, a lane that shrank). The transitions
 * themselves are in the subclasses, one group per file: `CoreRemovals` (cancel, purge, hand
 * back), `CoreAttempts` (start, succeed, fail, time out, retry) and {@link Core} (the lifecycle,
 * sources, arrivals, promotion, keys).
 *
 * @internal
 */
export abstract class CoreState {
  readonly dispatcher: Dispatcher;
  readonly outbox = new Outbox();
  /** Job timeouts: the running attempts' deadlines. */
  readonly deadlines = new Deadlines();
  readonly counters: WorkerCounters = zeroCounters();
  readonly deadLetters: DeadLetterStore<unknown>;
  /** Names of the bound sources: unique within the worker, free again once a source leaves the list. */
  readonly names = new Set<string>();
  /** The worker's slot count. */
  concurrency: number;
  /** Slots in use: attempts whose handler has not settled, cancelled or timed-out ones included. */
  slotsInUse = 0;
  /** Waiting jobs over every source, due or delayed (and parked redrives). */
  queued = 0;
  /** Delayed jobs over every source. */
  delayed = 0;
  /** The error of the halt in force, if any. */
  haltError: InvariantError | undefined = undefined;
  protected readonly defaultTimeout: number | undefined;
  protected currentPhase: Phase;
  /** The tick of adds in progress (see `Core.endAddTick`). */
  protected addTick = 1;
  /** Waiting jobs with a `timeout` option of their own: their start needs the time. */
  protected timedOutable = 0;
  protected readonly promotion: Promotion;
  protected readonly promoteStepSize: number;
  constructor(config: CoreConfig) {
    this.concurrency = config.concurrency;
    this.dispatcher = new Dispatcher(config.picker, config.strategyName);
    this.defaultTimeout = config.timeout;
    this.promoteStepSize = config.promoteStep ?? PROMOTE_STEP;
    this.promotion = new Promotion((source) => this.dispatcher.touch(source), config.workClock);
    this.deadLetters = new DeadLetterStore(config.deadLetterLimit);
    this.currentPhase = config.autoRun ? Phase.Started : Phase.Initiated;
  }

  get phase(): Phase {
    return this.currentPhase;
  }

  get status(): WorkerStatus {
    return statusOf(this.currentPhase, this.slotsInUse, this.queued);
  }

  /** Every bound source in list order. */
  get list(): readonly Lane[] {
    return this.dispatcher.list;
  }

  /**
   * Whether the next decision depends on the time: delayed jobs, rate limits or timeouts exist.
   * When it does not, the shell need not read the clock at all.
   */
  get needsClock(): boolean {
    return (
      this.delayed > 0 || this.dispatcher.rateLimited > 0 || this.deadlines.length > 0 || this.timedOutable > 0 || this.defaultTimeout !== undefined
    );
  }

  /**
   * The next time at which time alone changes something (a delayed job comes due, a rate window
   * opens, an attempt times out), or `Infinity`. Delays and windows count only while jobs may
   * start and a slot is free (with every slot busy, only a finishing job can start the next one,
   * and it triggers a pass itself; counting them then made a rate window that is already open
   * wake the shell every millisecond); timeouts always do.
   */
  wakeAt(): number {
    if (this.deadlines.length === 0 && this.delayed === 0 && this.dispatcher.rateLimited === 0) return Infinity;
    let at = this.deadlines.nextAt();
    if (this.currentPhase === Phase.Started && this.slotsInUse < this.concurrency && (this.delayed > 0 || this.dispatcher.rateLimited > 0)) {
      at = Math.min(at, this.dispatcher.wakeAt(this.promotion.pending));
    }
    return at;
  }

  protected retireIfEmpty(source: Lane): void {
    if (source.retiring && source.index >= 0 && source.running === 0 && source.length === 0) {
      this.dispatcher.unbind(source);
      this.names.delete(source.name);
    }
  }

  /** A job was made for `lane` by `add`, `publish` or `redrive`: counted as added (even if it is cancelled at once). */
  protected added(lane: Lane): void {
    this.counters.added++;
    lane.counters.added++;
  }

  /** `Core.admit` without counting the job as added (a parked redrive, counted when it was parked). */
  protected join(job: CoreJob, runAt: number | undefined, now: number, timing: Timed): boolean {
    const lane = job.home as Lane;
    // Only a job added with the time read needs to know (its add time is kept for the age).
    const wasEmpty = now !== UNTIMED && lane.length === 0;
    const ext = job.ext;
    let firstOfTick = false;
    if (runAt === undefined && ext === undefined) {
      // The common case (an add without options): due now, with no id and no timeout of its own.
      if (lane.timed > 0) {
        job.dueAt = now;
        lane.timed++;
      }
      this.queued++;
      lane.due.pushFresh(job);
    } else {
      const delayed = runAt !== undefined && runAt > now;
      job.dueAt = delayed ? runAt : runAt !== undefined || lane.timed > 0 ? now : UNTIMED;
      if (job.dueAt !== UNTIMED) lane.timed++;
      if (ext !== undefined) {
        if (ext.timeout !== undefined) this.timedOutable++;
        if (ext.id !== undefined) claimId(job, ext.id);
      }
      this.queued++;
      if (delayed) {
        job.state = State.Delayed;
        if (job.dueAt <= lane.delayed.horizon) this.catchUp(lane); // as in #retry
        lane.delayed.push(job);
        this.delayed++;
      } else {
        job.state = State.Due;
        lane.due.pushFresh(job);
      }
    }
    if (now !== UNTIMED) {
      const ages = lane.ages;
      if (wasEmpty) ages.noteFirst(job, now);
      if (job.state === State.Due && ages.notesTicks && ages.tickNoted !== this.addTick) {
        ages.noteTick(job, now, this.addTick, lane.due.peek());
        firstOfTick = true;
      }
      if (timing !== Timed.No) {
        if (timing === Timed.InFull) job.timeInFull();
        ages.noteSampled(job, now);
      }
    }
    if (!lane.inEligible) this.dispatcher.touch(lane);
    return firstOfTick;
  }

  /**
   * A parked redrive leaves without joining (cancelled, purged): the id it took over goes back to
   * the job it waited for, whose handler still runs, so the id stays in use until that handler
   * returns (SPEC 5).
   */
  protected giveIdBack(job: CoreJob): void {
    const ext = job.extras();
    const blocker = ext.parkedBehind;
    ext.parkedBehind = undefined;
    releaseId(job);
    if (blocker?.inFlight === true && ext.id !== undefined && blocker.ext?.id === ext.id) claimId(blocker, ext.id);
  }

  /**
   * Moves every due job `source` still holds in its delayed heap into its due order, for a
   * strategy that reads the source's length (SPEC 4: the lengths as they are).
   */
  catchUp(source: Lane): void {
    this.delayed -= this.promotion.catchUp(source);
  }

  protected endAttempt(job: CoreJob): void {
    const deadline = job.ext?.deadline;
    if (deadline !== undefined) {
      this.deadlines.remove(deadline);
      (job.ext as NonNullable<CoreJob['ext']>).deadline = undefined;
    }
  }

  /** One slot of the worker and of `source` is free again. */
  protected freeSlot(source: Lane): void {
    source.running--;
    this.slotsInUse--;
    if (this.slotsInUse < 0 || source.running < 0) {
      throw new InvariantError(
        'slots-never-negative',
        `slots in use went negative (worker ${this.slotsInUse}, source "${source.name}" ${source.running})`,
      );
    }
  }

  protected admitParked(job: CoreJob, now: number): void {
    const ext = job.extras();
    if (!ext.parked || job.state !== State.Due) return;
    ext.parkedBehind = undefined;
    this.unpark(job); // join counts it again
    // Always with the time: it is due from now on, and its add order (from the redrive) is older
    // than that of jobs added while it was parked, so add order alone (UNTIMED) would put it
    // before them in a priority queue.
    this.join(job, now, now, Timed.No);
  }

  /** A parked redrive stops waiting (it joins its lane, or leaves for good): it is no longer counted as queued. */
  protected unpark(job: CoreJob): void {
    (job.ext as JobExtras).parked = false;
    const lane = job.home as Lane;
    const parked = lane.parked;
    parked?.delete(job);
    if (parked?.size === 0) lane.parked = undefined;
    this.queued--;
  }

  /** A queued job left its lane without starting (cancelled, its claim lost): it counts nowhere any more. */
  protected leftQueued(lane: Lane, job: CoreJob): void {
    this.queued--;
    if (job.dueAt !== UNTIMED) lane.timed--;
    if (job.ext?.timeout !== undefined) this.timedOutable--;
    lane.ages.forget(job, isTimed(job));
  }

  /**
   * Settles `job` cancelled. An Error captures a stack trace, which made purging a million
   * waiting jobs take seconds: unless a signal (running) or a promise needs it now, keep only the
   * reason and make the `CancelledError` on demand.
   */
  protected settleCancelled(job: CoreJob, reason: unknown, running: boolean): void {
    // The error first: describing the reason may call its toString (user code), before any change.
    job.value = running || job.promised !== undefined ? new CancelledError(reason) : CancelReason.of(reason);
    job.state = State.Cancelled;
  }

  protected shrunk(source: Lane): void {
    this.dispatcher.touch(source);
    if (source.sizeWatched) this.outbox.record(Note.Shrunk, undefined, source, 0);
    this.retireIfEmpty(source);
  }
}
