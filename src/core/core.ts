import type { Clock } from './clock.js';
import { DeadLetterStore } from './dead-letters.js';
import { CancelledError, InvariantError, type TimeoutError } from '../api/errors.js';
import { claimId, releaseId } from './job-ids.js';
import { CancelReason, Deadline, State, STATUS, UNTIMED, type CoreJob } from './job-record.js';
import { isTimed, Timed } from './sampling.js';
import type { JobProgress } from '../api/jobs.js';
import type { Lane } from './lane.js';
import type { Picker } from '../api/strategy.js';
import type { WorkerCounters } from '../api/stats.js';
import { zeroCounters } from './counters.js';
import { Deadlines } from './deadlines.js';
import { Dispatcher } from './dispatcher.js';
import { Note, Outbox } from './outbox.js';
import { PROMOTE_STEP, Promotion } from './promotion.js';
import { nextPhase, Phase, statusOf, type LifecycleCall, type WorkerStatus } from './worker-state.js';
import { safeString } from '../api/describe.js';

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
 * The deciding half of a worker (SPEC 12): every transition of a job (admit, start, succeed,
 * retry, fail, time out, cancel, promote, admit a parked successor, dead-letter) and of the worker
 * (the lifecycle table, halt) as a function of its state, the event and the time it is given.
 * It owns no timer, reads no clock for its decisions (only to bound a burst's step per turn,
 * see `CoreConfig.workClock`) and runs no user code during a transition (a strategy's
 * `pick` aside, whose answer is checked): what a transition leads to is recorded in
 * {@link outbox}, and the shell acts on it (settles promises, aborts signals, emits events)
 * once the transition is complete.
 *
 * It is the only writer of a job's state, the worker's phase and these counters (and its sources'). Every
 * invariant of SPEC 8 is checked here, in every build; a broken one throws
 * {@link InvariantError}, and the shell halts the worker.
 *
 * @internal
 */
export class Core {
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
  readonly #timeout: number | undefined;
  #phase: Phase;
  /** The tick of adds in progress (see {@link endAddTick}). */
  #addTick = 1;
  /** Waiting jobs with a `timeout` option of their own: their start needs the time. */
  #timedOutable = 0;
  readonly #promotion: Promotion;
  readonly #promoteStep: number;

  constructor(config: CoreConfig) {
    this.concurrency = config.concurrency;
    this.dispatcher = new Dispatcher(config.picker, config.strategyName);
    this.#timeout = config.timeout;
    this.#promoteStep = config.promoteStep ?? PROMOTE_STEP;
    this.#promotion = new Promotion((source) => this.dispatcher.touch(source), config.workClock);
    this.deadLetters = new DeadLetterStore(config.deadLetterLimit);
    this.#phase = config.autoRun ? Phase.Started : Phase.Initiated;
  }

  get phase(): Phase {
    return this.#phase;
  }

  get status(): WorkerStatus {
    return statusOf(this.#phase, this.slotsInUse, this.queued);
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
    return this.delayed > 0 || this.dispatcher.rateLimited > 0 || this.deadlines.length > 0 || this.#timedOutable > 0 || this.#timeout !== undefined;
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
    if (this.#phase === Phase.Started && this.slotsInUse < this.concurrency && (this.delayed > 0 || this.dispatcher.rateLimited > 0)) {
      at = Math.min(at, this.dispatcher.wakeAt(this.#promotion.pending));
    }
    return at;
  }

  // ---------------------------------------------------------------- the worker

  /** `setConcurrency`: the worker's slot count from now on (a lower one interrupts nothing: starts wait). */
  setConcurrency(concurrency: number): void {
    this.concurrency = concurrency;
  }

  /** Applies a lifecycle call (SPEC 2's table); returns whether it did anything. Throws `InvalidStateError`. */
  call(call: LifecycleCall): boolean {
    const next = nextPhase(call, this.#phase, this.slotsInUse, this.queued);
    if (next === undefined) return false;
    this.#phase = next;
    if (call === 'start' || call === 'stop') this.haltError = undefined;
    if (call === 'pause') this.outbox.record(Note.Paused, undefined, undefined, 0);
    else if (call === 'resume') this.outbox.record(Note.Resumed, undefined, undefined, 0);
    return true;
  }

  /** Fail-stop: start nothing more, keep every waiting job (SPEC 8). */
  halt(cause: unknown): void {
    if (this.#phase === Phase.Halted) return;
    const error =
      cause instanceof InvariantError ? cause : new InvariantError('internal', `unexpected error inside qmux: ${safeString(cause)}`, { cause });
    this.#phase = Phase.Halted;
    this.haltError = error;
    this.outbox.record(Note.Halted, undefined, error, 0);
  }

  // ---------------------------------------------------------------- sources

  /**
   * Claims a name for a new source of `kind`: the `requested` one, which no other bound source
   * may have (a `TypeError` names the `worker`), or the first free `<kind>-<n>` from `n`.
   */
  claimName(requested: string | undefined, kind: string, n: number, worker: string): string {
    let name = requested;
    if (name === undefined) {
      do name = `${kind}-${n++}`;
      while (this.names.has(name));
    } else if (this.names.has(name)) {
      throw new TypeError(`qmux: bind option "name": worker "${worker}" already has a source named "${name}"`);
    }
    this.names.add(name);
    return name;
  }

  /**
   * A dead letter was put back as `job` (see `Worker.redrive`): the entry leaves the store, and a
   * job whose id was generated keeps it (`keptId`, never looked up).
   */
  redriven(entry: object, job: CoreJob, generatedId: string | undefined): void {
    if (generatedId !== undefined) job.extras().keptId = generatedId;
    this.deadLetters.remove(entry as never);
  }

  bind(source: Lane): void {
    this.dispatcher.bind(source);
  }

  /** The source takes no more jobs and leaves the list once nothing of it waits or runs. */
  retire(source: Lane): void {
    source.retiring = true;
    this.#retireIfEmpty(source);
  }

  #retireIfEmpty(source: Lane): void {
    if (source.retiring && source.index >= 0 && source.running === 0 && source.length === 0) {
      this.dispatcher.unbind(source);
      this.names.delete(source.name);
    }
  }

  // ---------------------------------------------------------------- jobs arrive

  /** A job was made for `lane` by `add`, `publish` or `redrive`: counted as added (even if it is cancelled at once). */
  #added(lane: Lane): void {
    this.counters.added++;
    lane.counters.added++;
  }

  /** An add to `source` found its id in use there and returned the existing job instead. */
  deduplicate(source: Lane): void {
    this.counters.deduplicated++;
    source.counters.deduplicated++;
  }

  /**
   * Whether admitting a job into `lane` needs the time (the shell then reads the clock before
   * {@link admit}): it is delayed, a timed job waits there (add order alone no longer places a
   * job due now), the lane is empty (its first job's add time is kept for its age), or it is the
   * first job due on add of this tick of adds in a FIFO lane (see {@link endAddTick}).
   */
  admitNeedsTime(lane: Lane, delayed: boolean): boolean {
    return delayed || lane.timed > 0 || lane.length === 0 || (lane.ages.notesTicks && lane.ages.tickNoted !== this.#addTick);
  }

  /**
   * A new job joins its lane: due at `runAt` (monotonic ms) or now. `now` is the clock's reading,
   * or {@link UNTIMED} when the shell did not read it, which it may skip when
   * {@link admitNeedsTime} says so and the job is not timed: add order alone then places it.
   * `timing` is how the stats time it (the shell's sampler decides). Returns whether it was the
   * first of a tick of adds noted in its lane: the shell then ends the tick with its run
   * (see {@link endAddTick}).
   */
  admit(job: CoreJob, runAt: number | undefined, now: number, timing: Timed): boolean {
    this.#added(job.home as Lane);
    return this.#join(job, runAt, now, timing);
  }

  /** {@link admit} without counting the job as added (a parked redrive, counted when it was parked). */
  #join(job: CoreJob, runAt: number | undefined, now: number, timing: Timed): boolean {
    const lane = job.home as Lane;
    const wasEmpty = lane.length === 0;
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
        if (ext.timeout !== undefined) this.#timedOutable++;
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
      if (job.state === State.Due && ages.notesTicks && ages.tickNoted !== this.#addTick) {
        ages.noteTick(job, now, this.#addTick, lane.due.peek());
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

  /** The synchronous run of adds that {@link admit} noted a step of is over: the next add starts another. */
  endAddTick(): void {
    this.#addTick++;
  }

  /**
   * A timed job starts its first attempt: its add time is taken from its lane's record (which
   * then forgets it), for its wait time; `undefined` if the lane kept none.
   */
  takeAddTime(job: CoreJob): number | undefined {
    return (job.home as Lane).ages.takeSampled(job);
  }

  /** Whether producers wait for `lane` to shrink (`onSizeLessThan`): while they do, each shrink is noted. */
  watchSize(lane: Lane, watched: boolean): void {
    lane.sizeWatched = watched;
  }

  /** A remote lane's engine became unreachable (it gives no job) or reachable again. */
  setReachable(lane: Lane, reachable: boolean): void {
    lane.unreachable = !reachable;
    this.dispatcher.touch(lane);
  }

  /**
   * A redriven job whose predecessor's handler still runs: it waits (counted, cancellable) and
   * joins its source only once that handler settles, so a job never has two attempts in flight.
   */
  park(job: CoreJob, blocker: CoreJob, now: number): void {
    this.#added(job.home as Lane);
    const ext = job.extras();
    ext.parked = true;
    ext.parkedBehind = blocker;
    ext.parkedSince = now;
    if (ext.id !== undefined) claimId(job, ext.id); // taken over from the blocker, if it is the same id
    blocker.extras().successor = job;
    (job.home.parked ??= new Set()).add(job);
    this.queued++;
  }

  /** A parked redrive is timed as `timing` says (its run only: its wait starts when it joins). */
  timeParked(job: CoreJob, timing: Timed): void {
    if (timing === Timed.InFull) job.timeInFull();
  }

  /**
   * A parked redrive leaves without joining (cancelled, purged): the id it took over goes back to
   * the job it waited for, whose handler still runs, so the id stays in use until that handler
   * returns (SPEC 5).
   */
  #giveIdBack(job: CoreJob): void {
    const ext = job.extras();
    const blocker = ext.parkedBehind;
    ext.parkedBehind = undefined;
    releaseId(job);
    if (blocker?.inFlight === true && ext.id !== undefined && blocker.ext?.id === ext.id) claimId(blocker, ext.id);
  }

  /** A job whose `signal` had already aborted when it was added: it settles cancelled and never joins its source. */
  cancelAtAdd(job: CoreJob, reason: unknown): void {
    this.#added(job.home as Lane);
    this.#settleCancelled(job, reason, false);
    this.counters.cancelled++;
    job.home.counters.cancelled++;
    this.outbox.record(Note.Cancelled, job, undefined, 0);
  }

  /**
   * Makes every delayed job due at `now` due (SPEC 3). What moves into the due orders at once is
   * what they need plus, in the sources that need every due job (priority and keyed queues) and
   * unless a continuation is already under way, a step (`CoreConfig.promoteStep`); the other
   * due jobs stay in the delayed heaps, due all the same, and move as they are needed (a FIFO
   * source's, one at each start) or in {@link promoteMore} (see `promotion.ts`: a million jobs
   * coming due at once must not block the event loop). Returns how many moved; while due jobs
   * are left to move, {@link promotionPending} is set, and {@link promotionContinues} while some
   * of them wait for a later turn's step.
   */
  promote(now: number): number {
    // Nothing delayed, no key waiting for time, nothing left to move: the hot path's one check.
    if (this.delayed === 0 && !this.#promotion.pending && this.dispatcher.timedKeys.length === 0) return 0;
    return this.#promote(now, this.#promotion.continuing ? 0 : this.#promoteStep);
  }

  /**
   * Moves a step more of the due jobs earlier promotions left in the delayed heaps of the
   * sources that need every due job, for a later turn while {@link promotionContinues}. Returns
   * how many moved.
   */
  promoteMore(): number {
    const moved = this.#promotion.more(this.dispatcher.list, this.#promoteStep);
    this.delayed -= moved;
    return moved;
  }

  /**
   * Time has come to `now` for the keys of `source`, a keyed queue with per-key rate limits, as at
   * a decision: keys whose window has opened can run, keys whose last start has left it are
   * forgotten. Before an add or a pause asks whether its key is active. Returns whether the
   * source became eligible (the shell then runs a pass: the keys let in left the heap that the
   * worker's timer was armed for).
   */
  advanceKeys(source: Lane, now: number): boolean {
    const was = source.inEligible;
    source.keys?.advance(now);
    this.dispatcher.touch(source);
    return !was && source.inEligible;
  }

  #promote(now: number, step: number): number {
    const timedKeys = this.dispatcher.timedKeys;
    // Time passing opens per-key rate windows too (and lets go of keys whose window has passed).
    for (let i = 0; i < timedKeys.length; i++) {
      const source = timedKeys[i] as Lane;
      source.keys?.advance(now);
      this.dispatcher.touch(source);
    }
    if (this.delayed === 0) {
      this.#promotion.pending = false;
      this.#promotion.continuing = false;
      return 0;
    }
    const moved = this.#promotion.promote(this.dispatcher.list, now, step);
    this.delayed -= moved;
    return moved;
  }

  /** Whether due jobs are left in the delayed heaps for a later {@link promote} to move. */
  get promotionPending(): boolean {
    return this.#promotion.pending;
  }

  /**
   * Whether some of those are in a source that needs every due job moved (a priority queue, a
   * keyed queue): the shell then calls {@link promoteMore} on a later turn. A FIFO source's due
   * jobs move one at each start, and need no turn of their own.
   */
  get promotionContinues(): boolean {
    return this.#promotion.continuing;
  }

  /**
   * Whether starts wait for a burst of due jobs to finish moving into a source that needs every
   * due job before it gives one (see `Promotion.unordered`): the shell's continuation moves them,
   * a step per turn, and its pass starts jobs again.
   */
  get startsWaitForOrder(): boolean {
    return this.#promotion.continuing && this.#promotion.unordered;
  }

  /**
   * Moves every due job `source` still holds in its delayed heap into its due order, for a
   * strategy that reads the source's length (SPEC 4: the lengths as they are).
   */
  catchUp(source: Lane): void {
    this.delayed -= this.#promotion.catchUp(source);
  }

  // ---------------------------------------------------------------- starts

  /**
   * One start: the job the strategy chooses at `now`, marked running, with a slot taken and its
   * deadline set, and a {@link Note.Started} for the shell to run it; or `undefined` when jobs
   * may not start, no slot is free or no source is eligible.
   */
  next(now: number): CoreJob | undefined {
    if (this.#phase !== Phase.Started || this.slotsInUse >= this.concurrency) return undefined;
    if (this.#promotion.continuing) {
      // A burst of due jobs is still moving into a source that needs them all before it gives
      // one: this start waits until they have (a step per turn, see `Promotion.orderBacklog`).
      this.delayed -= this.#promotion.orderBacklog(this.dispatcher.list, now);
      if (this.#promotion.unordered) return undefined;
    }
    const source = this.dispatcher.choose(now);
    if (source === undefined) return undefined;
    // The strategy is user code: it may have paused or stopped the worker, or lowered the
    // concurrency, and then this start must not happen.
    if (this.#phase !== Phase.Started || this.slotsInUse >= this.concurrency) return undefined;
    // A priority queue's next job may be any of its due ones: those still in the delayed jobs
    // move first (none by now: `orderBacklog` moved them, this is the rule it keeps).
    if (source.due.needsEveryDue && source.delayed.horizon !== -Infinity) this.catchUp(source);
    const keys = source.keys;
    const job = (keys === undefined ? source.due.shift() : keys.take(now)) as CoreJob;
    if (source.delayed.horizon !== -Infinity) this.delayed -= this.#promotion.topUp(source);
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
    if (own !== undefined) this.#timedOutable--;
    const timeout = own ?? this.#timeout;
    if (timeout !== undefined) {
      const deadline = new Deadline(now + timeout, job, timeout);
      job.extras().deadline = deadline;
      this.deadlines.add(deadline);
    }
    this.outbox.record(Note.Started, job, undefined, 0);
    if (source.sizeWatched) this.outbox.record(Note.Shrunk, undefined, source, 0);
    return job;
  }

  // ---------------------------------------------------------------- attempts end

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
      this.#freeSlot(source);
      if (source.keys !== undefined) source.keys.finished(job);
      if (!source.inEligible || source.keys !== undefined) this.dispatcher.touch(source);
      if (source.retiring) this.#retireIfEmpty(source);
      return true;
    }
    this.#endAttempt(job);
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
    this.#endAttempt(job);
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

  #endAttempt(job: CoreJob): void {
    const deadline = job.ext?.deadline;
    if (deadline !== undefined) {
      this.deadlines.remove(deadline);
      (job.ext as NonNullable<CoreJob['ext']>).deadline = undefined;
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
    if (job.ext?.timeout !== undefined) this.#timedOutable++;
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
    this.#freeSlot(source);
    const ext = job.ext;
    if (ext !== undefined) {
      if (job.state >= State.Succeeded) releaseId(job); // settled, and now no attempt runs
      const successor = ext.successor;
      if (successor !== undefined) {
        ext.successor = undefined;
        this.#admitParked(successor, now);
      }
    }
    // After the parked successor joined: its key (the same) stays active instead of being forgotten.
    if (source.keys !== undefined) source.keys.finished(job);
    // A finish can only make a plain source eligible (one fewer running); a keyed one is asked anyway.
    if (!source.inEligible || source.keys !== undefined) this.dispatcher.touch(source);
    if (source.retiring) this.#retireIfEmpty(source);
  }

  /** One slot of the worker and of `source` is free again. */
  #freeSlot(source: Lane): void {
    source.running--;
    this.slotsInUse--;
    if (this.slotsInUse < 0 || source.running < 0) {
      throw new InvariantError(
        'slots-never-negative',
        `slots in use went negative (worker ${this.slotsInUse}, source "${source.name}" ${source.running})`,
      );
    }
  }

  #admitParked(job: CoreJob, now: number): void {
    const ext = job.extras();
    if (!ext.parked || job.state !== State.Due) return;
    ext.parked = false;
    ext.parkedBehind = undefined;
    job.home.parked?.delete(job);
    this.queued--; // #join counts it again
    // Always with the time: it is due from now on, and its add order (from the redrive) is older
    // than that of jobs added while it was parked, so add order alone (UNTIMED) would put it
    // before them in a priority queue.
    this.#join(job, now, now, Timed.No);
  }

  // ---------------------------------------------------------------- keys (SPEC 10)

  /** Pauses key `name` of a keyed queue (`weight`: the shell's answer of `keys.weight`, should the key become active now). */
  pauseKey(source: Lane, name: string, weight: number): void {
    source.keys?.pause(name, weight);
    this.dispatcher.touch(source);
  }

  /** Resumes key `name`; returns whether a job of it may start now (the shell then runs a pass). */
  resumeKey(source: Lane, name: string): boolean {
    const ready = source.keys?.resume(name) === true;
    this.dispatcher.touch(source);
    return ready;
  }

  // ---------------------------------------------------------------- progress

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

  // ---------------------------------------------------------------- cancellation

  /**
   * Cancels `job`: a waiting one leaves its source, a running one keeps its slot until its
   * handler settles (the shell aborts its signal). Returns false if it had already settled.
   */
  cancel(job: CoreJob, reason: unknown): boolean {
    const state = job.state;
    if (state >= State.Succeeded) return false;
    const running = state === State.Running;
    this.#settleCancelled(job, reason, running);
    const source = job.home as Lane;
    if (running) this.#endAttempt(job);
    else if (job.ext?.parked === true) {
      job.ext.parked = false; // never joins its source now
      this.#giveIdBack(job);
      source.parked?.delete(job);
      this.queued--;
      this.#shrunk(source);
    } else {
      if (state === State.Delayed) {
        source.delayed.markRemoved();
        this.delayed--;
      } else if (source.keys === undefined) {
        source.due.markRemoved();
        if (source.delayed.horizon !== -Infinity) this.delayed -= this.#promotion.topUp(source);
      }
      if (source.keys !== undefined) source.keys.removed(job, state === State.Delayed);
      this.queued--;
      if (job.dueAt !== UNTIMED) source.timed--;
      if (job.ext?.timeout !== undefined) this.#timedOutable--;
      source.ages.forget(job, isTimed(job));
      this.#shrunk(source);
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
    for (const job of jobs) if (job.ext?.timeout !== undefined) this.#timedOutable--;
    const parked = source.parked;
    if (parked !== undefined) {
      for (const job of parked) {
        if (key !== undefined && job.key !== key) continue;
        (job.ext as NonNullable<CoreJob['ext']>).parked = false; // never joins now
        this.#giveIdBack(job);
        parked.delete(job);
        jobs.push(job);
        this.queued--;
      }
      if (parked.size === 0) source.parked = undefined;
    }
    jobs.sort((a, b) => a.seq - b.seq);
    for (const job of jobs) {
      this.#settleCancelled(job, undefined, false);
      releaseId(job);
    }
    this.counters.cancelled += jobs.length;
    source.counters.cancelled += jobs.length;
    for (const job of jobs) this.outbox.record(Note.Cancelled, job, undefined, 0);
    this.#shrunk(source);
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
    this.queued--;
    if (job.dueAt !== UNTIMED) source.timed--;
    if (job.ext?.timeout !== undefined) this.#timedOutable--;
    source.ages.forget(job, isTimed(job));
    releaseId(job);
    this.#shrunk(source);
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
    this.#shrunk(source);
    return jobs;
  }

  /**
   * Settles `job` cancelled. An Error captures a stack trace, which made purging a million
   * waiting jobs take seconds: unless a signal (running) or a promise needs it now, keep only the
   * reason and make the `CancelledError` on demand.
   */
  #settleCancelled(job: CoreJob, reason: unknown, running: boolean): void {
    // The error first: describing the reason may call its toString (user code), before any change.
    job.value = running || job.promised !== undefined ? new CancelledError(reason) : CancelReason.of(reason);
    job.state = State.Cancelled;
  }

  #shrunk(source: Lane): void {
    this.dispatcher.touch(source);
    if (source.sizeWatched) this.outbox.record(Note.Shrunk, undefined, source, 0);
    this.#retireIfEmpty(source);
  }
}
