import type { Core } from '../core/core.js';
import { Phase } from '../core/worker-state.js';
import { State } from '../core/job-record.js';
import type { SourceHost } from '../sources/source.js';
import { MAX_TIMER_MS } from '../internal/validate.js';
import type { RemoteAdapter, RemoteJob } from './adapter.js';
import { isLockLost } from './errors.js';
import { ANSWER_WITHIN_MS, type Outage } from './outage.js';
import type { RemoteJobRecord } from './remote-job.js';

const enum Call {
  Complete,
  Fail,
  Release,
}

const CALL_NAMES = ['complete', 'fail', 'release'] as const;

/** What a remote source's claims need to know of it and tell it. @internal */
export interface ClaimsOwner {
  /** A call about a claim failed or went unanswered: the engine may be out of reach. */
  fault(what: string, error: unknown): void;
  /** The engine answered a call: an outage, if any, is over. */
  answered(): void;
  /** A call ended or a claim was let go: a stop may have been waiting for it. */
  checkQuiet(): void;
  /** The last outcome being recorded is recorded (see `RemoteHost.recorded`). */
  recorded(): void;
  /** Whether the source is stopping, closing, or stopped with its adapter closed: a release that fails then lets its claim go. */
  isStopping(): boolean;
  /** Whether the source is closing: a retry's timer then keeps the process alive. */
  isClosing(): boolean;
  /** Whether its connections are closed (stopped, or closed): a call unanswered then is no outage. */
  isDisconnected(): boolean;
}

/**
 * Every job a remote source holds a claim on, from its claim to the engine's answer about its
 * outcome or its release: the claims renewed together on one timer (one call for all of them),
 * each outcome (complete, fail) or release timed, retried while the engine is out of reach and
 * given up once the lock has lapsed, and the claims the engine says are gone counted as lost.
 *
 * @internal
 */
export class ClaimedJobs<T, R> {
  readonly #adapter: RemoteAdapter<T, R>;
  readonly #host: SourceHost;
  readonly #core: Core;
  readonly #outage: Outage;
  readonly #owner: ClaimsOwner;
  /** Every job it holds a claim on: unstarted, running, or with its outcome being recorded. */
  readonly #claimed = new Map<RemoteJob<T>, RemoteJobRecord<T, R>>();
  /** Calls in flight or waiting to be retried: complete, fail, release. */
  #io = 0;
  /** Outcomes (complete, fail) on their way to the engine: the worker is not idle until they are recorded. */
  #outcomes = 0;
  /** Jobs whose release is among those calls. */
  readonly #releasing = new Set<RemoteJobRecord<T, R>>();
  #extendTimer: ReturnType<typeof setInterval> | undefined = undefined;
  #extending = false;
  /**
   * What ends each release in flight (or its retry) without its answer: a stop that has waited
   * its time for the engine (see `RemoteSource`'s `#giveUp`) runs them. Outcomes have their own
   * rule (see `#lapse`): a slow engine that answers is waited for.
   */
  readonly #releases = new Set<() => void>();

  /**
   * @param adapter - the source's adapter
   * @param host - the source's worker (its clock)
   * @param core - the worker's core (its phase; claimed jobs it drops when their claim is lost)
   * @param outage - the source's outage: faults, backoff, lost claims
   * @param owner - the source
   */
  constructor(adapter: RemoteAdapter<T, R>, host: SourceHost, core: Core, outage: Outage, owner: ClaimsOwner) {
    this.#adapter = adapter;
    this.#host = host;
    this.#core = core;
    this.#outage = outage;
    this.#owner = owner;
  }

  /** Jobs it holds a claim on (unstarted, running, recording). */
  get size(): number {
    return this.#claimed.size;
  }

  /** Calls in flight or waiting to be retried: complete, fail, release. */
  get calls(): number {
    return this.#io;
  }

  /** Releases among those calls. */
  get releasing(): number {
    return this.#releasing.size;
  }

  /** Whether outcomes are still on their way to the engine. */
  get recordingOutcomes(): boolean {
    return this.#outcomes > 0;
  }

  /** Whether a release is in flight or waiting to be retried: a stop that gives up on the engine ends those. */
  get releasesPending(): boolean {
    return this.#releases.size > 0;
  }

  /** The handler of `job` settled: record the outcome the core decided (or let a lost claim go). */
  recordOutcome(job: RemoteJobRecord<T, R>): void {
    if (job.lockLost) {
      this.#let(job);
      this.#owner.checkQuiet();
      return;
    }
    this.#io++;
    this.#outcomes++;
    job.outcomeSince = this.#host.clock.now();
    this.#call(job, job.state === State.Succeeded ? Call.Complete : Call.Fail);
    this.#owner.checkQuiet(); // a stop waiting for its last job starts its wait for the engine now
  }

  /** Hands `job`, claimed and not started, back to the engine. */
  release(job: RemoteJobRecord<T, R>): void {
    this.#io++;
    this.#releasing.add(job);
    this.#call(job, Call.Release);
  }

  /** A stop has waited its time for the engine: every release lets its claim lapse instead (the engine gives the job out again). */
  giveUpReleases(): void {
    for (const giveUp of [...this.#releases]) giveUp();
  }

  /** Stops renewing claims (the source is shutting down); the next claim starts it again. */
  stopRenewing(): void {
    if (this.#extendTimer !== undefined) {
      clearInterval(this.#extendTimer);
      this.#extendTimer = undefined;
    }
  }

  /** Holds the claim on `job`, just claimed: renewed until its outcome is recorded or it is released. */
  hold(job: RemoteJobRecord<T, R>): void {
    this.#claimed.set(job.remote, job);
    const lock = this.#adapter.lockDuration;
    if (this.#extendTimer === undefined && Number.isFinite(lock)) {
      // Capped at the longest timer Node keeps: past it, Node fires every millisecond.
      this.#extendTimer = setInterval(() => this.#extend(), Math.min(MAX_TIMER_MS, Math.max(1, lock / 2)));
      this.#extendTimer.unref?.();
    }
  }

  #let(job: RemoteJobRecord<T, R>): void {
    this.#claimed.delete(job.remote);
    if (this.#claimed.size === 0 && this.#extendTimer !== undefined) {
      clearInterval(this.#extendTimer);
      this.#extendTimer = undefined;
    }
  }

  /** Renews every claim it holds, one call for all of them (one timer per source, not per job). */
  #extend(): void {
    if (this.#extending) return;
    const jobs: RemoteJob<T>[] = [];
    // A job whose outcome is being recorded is not renewed: the engine may record it first, and
    // would then report its claim gone when it was only finished.
    for (const job of this.#claimed.values()) if (!job.lockLost && !job.recording) jobs.push(job.remote);
    if (jobs.length === 0) return;
    this.#extending = true;
    const sentAt = this.#host.clock.now();
    // biome-ignore lint/suspicious/noConfusingVoidType: what RemoteAdapter.extend resolves to
    let answer: Promise<void | readonly RemoteJob<T>[]>;
    try {
      answer = Promise.resolve(this.#adapter.extend(jobs));
    } catch (error) {
      answer = Promise.reject(error);
    }
    // Unanswered, the next renewal may try again (an answer that comes late is still read).
    const settled = this.#expectAnswer('the renewal of its claims', () => (this.#extending = false));
    answer.then(
      (lost) => {
        settled();
        this.#extending = false;
        const gone = Array.isArray(lost) ? new Set(lost) : undefined;
        for (const remote of jobs) {
          const job = this.#claimed.get(remote);
          // A renewal that answers late (after a newer one) must not set the confirmation back.
          if (job !== undefined && gone?.has(remote) !== true && sentAt > job.confirmedAt) job.confirmedAt = sentAt;
        }
        this.#owner.answered();
        if (gone !== undefined) {
          let count = 0;
          for (const remote of gone) {
            const job = this.#claimed.get(remote);
            if (job !== undefined && !job.recording && this.#markLost(job)) count++;
          }
          if (count > 0) this.#outage.lost(count); // one report for the renewal
        }
      },
      (error: unknown) => {
        settled();
        this.#extending = false;
        this.#owner.fault('could not renew its claims', error);
      },
    );
  }

  #lost(job: RemoteJobRecord<T, R>): void {
    if (this.#markLost(job)) this.#outage.lost();
  }

  /** Marks `job`'s claim lost (the caller reports it); returns false if it already was. */
  #markLost(job: RemoteJobRecord<T, R>): boolean {
    if (job.lockLost) return false;
    job.lockLost = true;
    // Not started: it is dropped, not run (the engine gives it to another consumer), and no
    // longer held (nothing to renew, record or release). One being handed back is not in the
    // core's jobs (never admitted, or taken back): its release settles it.
    if (!this.#releasing.has(job) && this.#core.dropClaimed(job)) this.#let(job);
    return true;
  }

  /** Drops the claimed, unstarted jobs whose lock has not been confirmed for `lockDuration`. */
  dropLapsed(): void {
    const lock = this.#adapter.lockDuration;
    if (!Number.isFinite(lock)) return;
    const now = this.#host.clock.now();
    let count = 0;
    for (const job of this.#claimed.values()) {
      if (job.state === State.Due && !this.#releasing.has(job) && now - job.confirmedAt >= lock && this.#markLost(job)) count++;
    }
    if (count > 0) this.#outage.lost(count);
  }

  #call(job: RemoteJobRecord<T, R>, call: Call): void {
    job.recording = true;
    let answer: Promise<void>;
    try {
      const adapter = this.#adapter;
      answer = Promise.resolve(
        call === Call.Complete
          ? adapter.complete(job.remote, job.value as R)
          : call === Call.Fail
            ? adapter.fail(job.remote, job.value)
            : adapter.release(job.remote),
      );
    } catch (error) {
      answer = Promise.reject(error);
    }
    const expected = this.#expectAnswer(`${CALL_NAMES[call]} job ${job.id}`);
    // An outcome still unanswered once the lock has lapsed and the engine counts as out of reach
    // for it (no answer within ANSWER_WITHIN_MS) is given up then (see `#lapse`): a client that
    // queues commands until Redis is back would hold it, and a stop, for ever. A slow engine that
    // answers is waited for: what it says (recorded, or the lock lost) is what counts.
    let over = false;
    let lapseTimer: ReturnType<typeof setTimeout> | undefined;
    const settled = (): boolean => {
      if (over) return false; // given up already: what the engine says now changes nothing here
      over = true;
      clearTimeout(lapseTimer);
      expected();
      this.#releases.delete(giveUp);
      return true;
    };
    // Given up unanswered: an outcome counts as a lost claim (`#lapse`); a release lets the
    // claim go (its lock lapses in the engine, which gives the job out again).
    const giveUp = (): void => {
      if (!settled()) return;
      if (call === Call.Release) this.#done(job);
      else this.#lapse(job);
    };
    if (call === Call.Release) this.#releases.add(giveUp);
    const watchLapse = (ms: number): void => {
      lapseTimer = setTimeout(
        () => {
          if (over) return;
          // A renewal sent before this call may have been confirmed since: the lock lasts longer.
          const left = this.#untilLapse(job);
          if (left > 0) return watchLapse(left);
          giveUp();
        },
        Math.min(MAX_TIMER_MS, ms),
      );
      lapseTimer.unref?.(); // the call itself keeps the process alive, or nothing does
    };
    if (call !== Call.Release && Number.isFinite(this.#adapter.lockDuration)) watchLapse(Math.max(ANSWER_WITHIN_MS, this.#untilLapse(job)));
    answer.then(
      () => {
        if (!settled()) return;
        this.#owner.answered();
        this.#done(job);
      },
      (error: unknown) => {
        if (settled()) this.#callFailed(job, call, error);
      },
    );
  }

  /**
   * `job`'s outcome went unrecorded for as long as its lock lasts, and no renewal was confirmed
   * meanwhile: the engine may have given the job to another consumer (its stalled check), so the
   * outcome is no longer this worker's to record. The claim counts as lost, and a stop does not
   * wait for an engine that may never come back.
   */
  #lapse(job: RemoteJobRecord<T, R>): void {
    job.recording = false;
    this.#lost(job);
    this.#done(job);
  }

  /**
   * Starts the clock on a call to the engine: unanswered after {@link ANSWER_WITHIN_MS}, it is a
   * fault (the engine is out of reach) and `onSilence` runs. Returns what to call once it settles.
   */
  #expectAnswer(what: string, onSilence?: () => void): () => void {
    const timer = setTimeout(() => {
      if (this.#owner.isDisconnected()) return; // its connections are closed: no outage to report
      this.#owner.fault(`got no answer to ${what}`, new Error(`no answer within ${ANSWER_WITHIN_MS} ms`));
      onSilence?.();
    }, ANSWER_WITHIN_MS);
    timer.unref?.(); // the call itself keeps the process alive, or nothing does
    return () => clearTimeout(timer);
  }

  #callFailed(job: RemoteJobRecord<T, R>, call: Call, error: unknown): void {
    job.recording = false;
    if (isLockLost(error)) {
      // The engine answered, only not what we hoped. Counted first: the loss joins the report of
      // an outage that this answer ends.
      this.#lost(job);
      this.#owner.answered();
      this.#done(job);
      return;
    }
    this.#owner.fault(`could not ${CALL_NAMES[call]} job ${job.id}`, error);
    if (call === Call.Release && this.#owner.isStopping()) {
      // Stopping with the engine out of reach: the claim is let go instead (its lock lapses, and
      // the engine gives the job out again), or stop() would wait for the engine forever.
      this.#done(job);
      return;
    }
    const outcome = call !== Call.Release;
    if (outcome && this.#untilGivenUp(job) <= 0) {
      this.#lapse(job);
      return;
    }
    // Retried until recorded or the lock is known lost (or lapsed): the job stays held (its
    // claim renewed). The timer keeps the process alive while the worker may start jobs or a
    // stop (or close) waits for the outcome; a paused or halted worker holds nothing that does
    // (SPEC 2), and the lock then lapses in the engine if the process ends. The last try comes
    // when the outcome would be given up, so a stop waits no longer than that.
    const giveUp = (): void => {
      clearTimeout(timer);
      this.#releases.delete(giveUp);
      this.#done(job);
    };
    const timer = setTimeout(
      () => {
        this.#releases.delete(giveUp);
        // Renewals went on meanwhile: the lock may hold still. If not, no engine confirmed it
        // since the last try failed, and the outcome is given up.
        if (outcome && this.#untilGivenUp(job) <= 0) this.#lapse(job);
        else this.#call(job, call);
      },
      Math.max(0, Math.min(this.#outage.backoffMs(), outcome ? this.#untilGivenUp(job) : Number.POSITIVE_INFINITY)),
    );
    if (!outcome) this.#releases.add(giveUp);
    const phase = this.#core.phase;
    if (phase !== Phase.Started && phase !== Phase.Stopped && !this.#owner.isClosing()) timer.unref?.();
  }

  /**
   * Ms until `job`'s outcome, failing to be recorded, is given up (see `#lapse`): once its lock
   * has lapsed and the engine has had {@link ANSWER_WITHIN_MS} to record it. The lapse is judged
   * from `confirmedAt`, an early estimate (a claim or renewal sent, not answered), so the engine
   * is first given the time it has to answer: an outage, not a slow start, gives an outcome up.
   */
  #untilGivenUp(job: RemoteJobRecord<T, R>): number {
    return Math.max(this.#untilLapse(job), job.outcomeSince + ANSWER_WITHIN_MS - this.#host.clock.now());
  }

  /** Ms until `job`'s lock lapses unless a renewal is confirmed: `Infinity` for a lock that does not expire. */
  #untilLapse(job: RemoteJobRecord<T, R>): number {
    const lock = this.#adapter.lockDuration;
    return Number.isFinite(lock) ? job.confirmedAt + lock - this.#host.clock.now() : Number.POSITIVE_INFINITY;
  }

  #done(job: RemoteJobRecord<T, R>): void {
    job.recording = false;
    const released = this.#releasing.delete(job);
    this.#let(job);
    this.#io--;
    this.#owner.checkQuiet();
    if (!released && --this.#outcomes === 0) this.#owner.recorded();
  }
}
