import { InvariantError } from '../api/errors.js';
import { claimId } from './job-ids.js';
import { UNTIMED, type CoreJob } from './job-record.js';
import { Timed } from './sampling.js';
import type { Lane } from './lane.js';
import { Note } from './outbox.js';
import { nextPhase, Phase, type LifecycleCall } from './worker-state.js';
import { safeString } from '../api/describe.js';

import { CoreAttempts } from './attempts.js';

export type { CoreConfig, Origin, RemoteCoreJob } from './core-state.js';

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
export class Core extends CoreAttempts {
  /** `setConcurrency`: the worker's slot count from now on (a lower one interrupts nothing: starts wait). */
  setConcurrency(concurrency: number): void {
    this.concurrency = concurrency;
  }

  /** Applies a lifecycle call (SPEC 2's table); returns whether it did anything. Throws `InvalidStateError`. */
  call(call: LifecycleCall): boolean {
    const next = nextPhase(call, this.currentPhase, this.slotsInUse, this.queued);
    if (next === undefined) return false;
    this.currentPhase = next;
    if (call === 'start' || call === 'stop') this.haltError = undefined;
    if (call === 'pause') this.outbox.record(Note.Paused, undefined, undefined, 0);
    else if (call === 'resume') this.outbox.record(Note.Resumed, undefined, undefined, 0);
    return true;
  }

  /** Fail-stop: start nothing more, keep every waiting job (SPEC 8). */
  halt(cause: unknown): void {
    if (this.currentPhase === Phase.Halted) return;
    const error =
      cause instanceof InvariantError ? cause : new InvariantError('internal', `unexpected error inside qmux: ${safeString(cause)}`, { cause });
    this.currentPhase = Phase.Halted;
    this.haltError = error;
    this.outbox.record(Note.Halted, undefined, error, 0);
  }

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
    this.retireIfEmpty(source);
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
    return delayed || lane.timed > 0 || lane.length === 0 || (lane.ages.notesTicks && lane.ages.tickNoted !== this.addTick);
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
    this.added(job.home as Lane);
    return this.join(job, runAt, now, timing);
  }

  /** The synchronous run of adds that {@link admit} noted a step of is over: the next add starts another. */
  endAddTick(): void {
    this.addTick++;
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
    this.added(job.home as Lane);
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
    if (this.delayed === 0 && !this.promotion.pending && this.dispatcher.timedKeys.length === 0) return 0;
    return this.#promote(now, this.promotion.continuing ? 0 : this.promoteStepSize);
  }

  /**
   * Moves a step more of the due jobs earlier promotions left in the delayed heaps of the
   * sources that need every due job, for a later turn while {@link promotionContinues}. Returns
   * how many moved.
   */
  promoteMore(): number {
    const moved = this.promotion.more(this.dispatcher.list, this.promoteStepSize);
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
      this.promotion.pending = false;
      this.promotion.continuing = false;
      return 0;
    }
    const moved = this.promotion.promote(this.dispatcher.list, now, step);
    this.delayed -= moved;
    return moved;
  }

  /** Whether due jobs are left in the delayed heaps for a later {@link promote} to move. */
  get promotionPending(): boolean {
    return this.promotion.pending;
  }

  /**
   * Whether some of those are in a source that needs every due job moved (a priority queue, a
   * keyed queue): the shell then calls {@link promoteMore} on a later turn. A FIFO source's due
   * jobs move one at each start, and need no turn of their own.
   */
  get promotionContinues(): boolean {
    return this.promotion.continuing;
  }

  /**
   * Whether starts wait for a burst of due jobs to finish moving into a source that needs every
   * due job before it gives one (see `Promotion.unordered`): the shell's continuation moves them,
   * a step per turn, and its pass starts jobs again.
   */
  get startsWaitForOrder(): boolean {
    return this.promotion.continuing && this.promotion.unordered;
  }

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
}
