import { Phase } from '../core/worker-state.js';
import type { JobProgress, JobRecord } from '../job.js';
import { State } from '../core/job-record.js';
import { Source, type SourceParts } from '../source.js';
import type { RemoteAdapter, RemoteJob } from './adapter.js';
import { unbindAdapter } from './bind.js';
import { LockLostError, RemoteSourceError } from './errors.js';
import { Outage } from './outage.js';
import { RemoteJobRecord } from './remote-job.js';
import { messageOf, safeString } from '../internal/describe.js';
import { MAX_TIMER_MS } from '../internal/validate.js';

/** The default `prefetch` is the source's or the worker's concurrency, at most this. */
export const MAX_DEFAULT_PREFETCH = 64;

/**
 * How long a call about claimed jobs (an outcome, a release, a renewal) may go unanswered before
 * the engine counts as out of reach (SPEC 9: "gets no answer within a few seconds"): a server that
 * stops answering over a live connection fails no call. A claim is not timed: it may wait for work.
 */
const ANSWER_WITHIN_MS = 5000;
/**
 * A claim that came back empty sooner than this (an adapter that does not long-poll) is
 * followed by the next one only after {@link EMPTY_CLAIM_SPACING_MS}, so that such an adapter
 * cannot spin the event loop.
 */
const EMPTY_CLAIM_MS = 20;
const EMPTY_CLAIM_SPACING_MS = 50;

/** What a remote source needs from its worker beyond what every source needs. @internal */
export interface RemoteHost {
  /** A claimed job joins the source (counted as added, due now, a pass scheduled). */
  admit(job: RemoteJobRecord): void;
  /** The source became eligible again (its engine answers): the worker should look. */
  wake(): void;
  /** Reports a remote fault (on `error`, or as a warning). */
  report(error: unknown): void;
  /** An outage began: emit `degraded`. */
  degraded(error: unknown): void;
  /** The source left the list (after `close()`). */
  closed(source: RemoteSource): void;
  /** The last outcome it was recording is recorded: the worker may be idle now. */
  recorded(): void;
}

const enum Call {
  Complete,
  Fail,
  Release,
}

const CALL_NAMES = ['complete', 'fail', 'release'] as const;

function isLockLost(error: unknown): boolean {
  return error instanceof LockLostError || (error instanceof Error && error.name === 'LockLostError');
}

/** What a worker makes a remote source of: a local source's parts, then its adapter, its `prefetch` and the worker's side of remote sources. @internal */
type RemoteSourceParts<T, R> = [...SourceParts, adapter: RemoteAdapter<T, R>, prefetch: number | undefined, remoteHost: RemoteHost];

/**
 * A source fed by a remote engine (SPEC 9), made by `worker.bindRemote(adapter, options)`. Its
 * waiting jobs are the jobs it holds claimed and not yet started (at most `prefetch`): the
 * strategy, eligibility, caps and `stats()` see them as due jobs. Their outcomes go back to the
 * engine, which owns retries; `purge()` and cancelling an unstarted job release it to the
 * engine.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 * @example
 * ```ts
 * const emails = worker.bindRemote(new BullMQSource('emails', { connection }), { weight: 3, prefetch: 4 });
 * emails.length;      // claimed jobs not yet started
 * await emails.close(); // hand back what it holds, record running outcomes, unbind
 * ```
 */
export class RemoteSource<T = unknown, R = unknown> extends Source<T, R> {
  /** @internal */
  override readonly isRemote: boolean = true;
  /** The adapter it claims from. */
  readonly remote: RemoteAdapter<T, R>;
  /** @internal Whether the engine answers, and what to report. */
  readonly outage: Outage;
  readonly #rhost: RemoteHost;
  readonly #prefetch: number | undefined;
  /** Every job it holds a claim on: unstarted, running, or with its outcome being recorded. */
  readonly #held = new Map<RemoteJob<T>, RemoteJobRecord<T, R>>();
  /** The claim in flight (at most one). */
  #claim: AbortController | undefined = undefined;
  /** A timer before the next claim: backoff after a fault, or spacing after an empty answer. */
  #claimTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** Calls in flight or waiting to be retried: complete, fail, release. */
  #io = 0;
  /** Outcomes (complete, fail) on their way to the engine: the worker is not idle until they are recorded. */
  #outcomes = 0;
  /** Jobs whose release is among those calls. */
  readonly #releasing = new Set<RemoteJobRecord<T, R>>();
  #quietWaiters: (() => void)[] = [];
  #extendTimer: ReturnType<typeof setInterval> | undefined = undefined;
  #extending = false;
  /** Set once it has closed its adapter while the worker may not start jobs; the next claim reopens it. */
  #shut = false;
  /**
   * What ends each release in flight (or its retry) without its answer: a stop that has waited
   * its time for the engine (see {@link #giveUp}) runs them. Outcomes have their own rule (see
   * `#lapse`): a slow engine that answers is waited for.
   */
  readonly #releases = new Set<() => void>();
  /** Set while a stop or close waits for the engine with none of its jobs running: when it stops waiting. */
  #giveUpTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** Set while the worker stops it: it finishes what it holds and closes the adapter. */
  #quiescing: Promise<void> | undefined = undefined;
  #closing: Promise<void> | undefined = undefined;

  /** Not for use: a worker makes its remote sources (`worker.bindRemote(adapter)`). */
  private constructor(...parts: RemoteSourceParts<T, R>) {
    const [host, core, due, name, bindOrder, options, adapter, prefetch, remoteHost] = parts;
    super(host, core, due, name, bindOrder, options);
    this.remote = adapter;
    this.#prefetch = prefetch;
    this.#rhost = remoteHost;
    this.outage = new Outage(name, (error) => remoteHost.report(error));
    adapter.watch?.((error) => {
      if (error === undefined) this.#answered();
      else this.#fault('lost its connection', error);
    });
  }

  /** @internal A remote source of the worker that passes its parts (its `bindRemote`). */
  static make<T, R>(...parts: RemoteSourceParts<T, R>): RemoteSource<T, R> {
    return new RemoteSource<T, R>(...parts);
  }

  /**
   * The most jobs it holds claimed and not yet started: the `prefetch` option, or the source's
   * `concurrency`, else the worker's, at most 64.
   */
  get prefetch(): number {
    const ceiling = Number.isFinite(this.maxRunning) ? this.maxRunning : this.core.concurrency;
    return Math.min(this.#prefetch ?? Math.min(MAX_DEFAULT_PREFETCH, ceiling), this.capacity);
  }

  /** @internal Not eligible while its engine cannot be reached. */
  override isEligible(now: number): boolean {
    return !this.unreachable && super.isEligible(now);
  }

  /**
   * Releases every claimed, unstarted job to the engine (their handles settle `'cancelled'`).
   * Claiming goes on.
   *
   * @returns how many jobs were released
   */
  override purge(): number {
    return super.purge();
  }

  /**
   * Hands back what it holds, waits for its running jobs' outcomes to be recorded, closes the
   * adapter and unbinds: the source leaves the list and `stats()`, and its name is free again.
   */
  override close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    super.close();
    this.#claim?.abort();
    this.#handBack();
    this.host.retire(this as Source);
    this.#closing = this.#whenQuiet()
      .then(() => this.#shutDown())
      .then(() => {
        unbindAdapter(this.remote);
        this.#rhost.closed(this as RemoteSource);
      });
    return this.#closing;
  }

  // ---------------------------------------------------------------- what the worker calls

  /**
   * @internal After every change of the worker: claims while jobs may start and there is room,
   * hands back and stops claiming when they may not.
   */
  sync(): void {
    if (this.core.phase !== Phase.Started || this.closed) {
      this.#claim?.abort();
      if (this.due.length > 0) this.#handBack();
      // Paused or halted with none of its jobs running: it holds no connection either (SPEC 2 and
      // 9), so that nothing of it keeps the process alive and no blocking fetch claims meanwhile.
      if (!this.closed && !this.#shut && this.running === 0) void this.quiesce();
      return;
    }
    this.#shut = false;
    if (this.#claim !== undefined || this.#claimTimer !== undefined || this.#quiescing !== undefined) return;
    const room = this.prefetch - this.due.length;
    if (room > 0) this.#startClaim(room);
  }

  /** @internal The handler of one of its jobs settled: record the outcome the core decided. */
  attemptEnded(job: RemoteJobRecord<T, R>): void {
    if (job.lockLost) {
      this.#let(job);
      this.#checkQuiet();
      return;
    }
    this.#io++;
    this.#outcomes++;
    job.outcomeSince = this.host.clock.now();
    this.#call(job, job.state === State.Succeeded ? Call.Complete : Call.Fail);
    this.#checkQuiet(); // a stop waiting for its last job starts its wait for the engine now
  }

  /** @internal Whether outcomes of its jobs are still on their way to the engine (see `RemoteHost.recorded`). */
  get recordingOutcomes(): boolean {
    return this.#outcomes > 0;
  }

  /**
   * @internal Why a progress report of `job` cannot be taken, or `undefined`: with an adapter
   * that stores progress, a value JSON cannot carry (a cycle, a BigInt), which no engine could
   * store. That is the caller's bad value (a `TypeError` at `job.updateProgress`), not an outage.
   */
  refuseProgress(job: JobRecord<T, R>, value: JobProgress): TypeError | undefined {
    if (this.remote.progress === undefined) return undefined;
    let why: string;
    try {
      if (JSON.stringify(value) !== undefined) return undefined;
      why = `JSON has no form for ${safeString(value)}`;
    } catch (error) {
      why = messageOf(error);
    }
    return new TypeError(
      `qmux: updateProgress(value) of remote job ${job.id} needs a value its engine can store as JSON (a number, string, boolean, or a plain object or array without cycles or BigInts): ${why}`,
    );
  }

  /**
   * @internal A running job reported progress: it is stored in the engine too (the adapter's
   * optional `progress`), best effort: a report that cannot be stored counts as a fault of the
   * source and is not retried, since the next report replaces it.
   */
  override progressed(job: JobRecord<T, R>, value: JobProgress): void {
    const adapter = this.remote;
    if (adapter.progress === undefined) return;
    let answer: Promise<void>;
    try {
      answer = Promise.resolve(adapter.progress((job as RemoteJobRecord<T, R>).remote, value));
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      () => this.#answered(),
      (error: unknown) => {
        if (!isLockLost(error)) this.#fault(`could not record the progress of job ${job.id}`, error);
      },
    );
  }

  /**
   * @internal An attempt of `job` is failing with `error` (its handler failed, or it timed out):
   * asks whether the engine will run it again, before the core's transition reads the answer
   * (`RemoteJob.retries`, adapter code, or else its attempts). An adapter that throws here is a
   * fault of the source, and the attempts decide.
   */
  judge(job: RemoteJobRecord<T, R>, error: unknown): void {
    const remote = job.remote;
    let retries = remote.attempt < (remote.maxAttempts ?? 1);
    if (remote.retries !== undefined) {
      try {
        retries = remote.retries(error) === true;
      } catch (fault) {
        this.#fault(`could not tell whether job ${job.id} will be retried`, fault);
      }
    }
    job.engineRetries = retries;
  }

  /** @internal A claimed, unstarted job was cancelled or purged: hand it back. */
  release(job: RemoteJobRecord<T, R>): void {
    this.#io++;
    this.#releasing.add(job);
    this.#call(job, Call.Release);
  }

  /**
   * @internal The worker stopped with none of its jobs running: finish the calls in flight,
   * stop renewing claims, close the adapter. Never rejects.
   */
  quiesce(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    if (this.#quiescing !== undefined) return this.#quiescing;
    this.#claim?.abort();
    this.#quiescing = this.#whenQuiet()
      .then(() => this.#shutDown())
      .then(() => {
        this.#quiescing = undefined;
        this.#shut = true;
        this.sync(); // start() or resume() may have come meanwhile
      });
    return this.#quiescing;
  }

  /** @internal Why it is degraded, or `undefined`. */
  get degradedReason(): string | undefined {
    return this.outage.error?.message;
  }

  // ---------------------------------------------------------------- claims

  #startClaim(max: number): void {
    const controller = new AbortController();
    this.#claim = controller;
    const startedAt = performance.now();
    const sentAt = this.host.clock.now();
    let answer: Promise<readonly RemoteJob<T>[]>;
    try {
      answer = Promise.resolve(this.remote.claim(max, controller.signal));
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (jobs) => this.#claimed(controller, jobs, max, startedAt, sentAt),
      (error: unknown) => this.#claimFailed(controller, error),
    );
  }

  #claimed(controller: AbortController, jobs: readonly RemoteJob<T>[], max: number, startedAt: number, sentAt: number): void {
    // A claim a stop gave up on (see #giveUp): what it got is not held, and its locks lapse in
    // the engine, which gives the jobs out again.
    if (this.#claim !== controller) return;
    this.#claim = undefined;
    if (!Array.isArray(jobs)) {
      this.#claimFailed(controller, new TypeError(`qmux: adapter.claim() must resolve to an array of jobs, got ${safeString(jobs)}`));
      return;
    }
    // An aborted claim resolves to nothing without asking the engine: that is no answer, and must
    // not end an outage.
    if (!controller.signal.aborted || jobs.length > 0) this.#answered();
    const accept = this.core.phase === Phase.Started && !this.closed && this.#quiescing === undefined;
    // At most what was asked for, and what the prefetch allows now: a setConcurrency that lowered
    // it while the claim was out hands the surplus back.
    const room = Math.min(max, this.prefetch - this.due.length);
    let taken = 0;
    let valid = 0;
    for (const remote of jobs) {
      if (typeof remote !== 'object' || remote === null) {
        // Nothing to hold or hand back: an adapter's bug, reported, not an outage.
        const error = new TypeError(`adapter.claim() resolved ${safeString(remote)} in its array, where a job { id, data, attempt } goes`);
        this.#rhost.report(new RemoteSourceError(this.name, 'got an entry of a claim that is not a job', error));
        continue;
      }
      valid++;
      const job = new RemoteJobRecord<T, R>(this, remote);
      job.confirmedAt = sentAt;
      this.#hold(job);
      if (accept && taken < room) {
        taken++;
        this.#rhost.admit(job);
      } else {
        this.release(job);
      }
    }
    // Spaced on the jobs it got: a claim that answers only entries that are not jobs is empty too.
    if (valid === 0 && !controller.signal.aborted && performance.now() - startedAt < EMPTY_CLAIM_MS) {
      this.#claimAfter(EMPTY_CLAIM_SPACING_MS);
    } else {
      this.sync();
    }
    this.#checkQuiet();
  }

  #claimFailed(controller: AbortController, error: unknown): void {
    if (this.#claim !== controller) return; // given up by a stop (see #claimed)
    this.#claim = undefined;
    if (!controller.signal.aborted) {
      this.#fault('could not claim jobs', error);
      this.#claimAfter(this.outage.backoffMs());
    } else {
      this.sync();
    }
    this.#checkQuiet();
  }

  /**
   * Claims again after `ms`. The timer keeps the process alive, as a claim in flight does: a
   * worker that may start jobs keeps consuming (SPEC 9), even through an adapter that holds no
   * connection of its own between calls. A stop clears it (`#shutDown`).
   */
  #claimAfter(ms: number): void {
    this.#claimTimer = setTimeout(() => {
      this.#claimTimer = undefined;
      this.sync();
    }, ms);
  }

  #handBack(): void {
    for (const job of this.core.handBack(this as Source)) this.release(job as RemoteJobRecord<T, R>);
  }

  // ---------------------------------------------------------------- outcomes and releases

  #call(job: RemoteJobRecord<T, R>, call: Call): void {
    job.recording = true;
    let answer: Promise<void>;
    try {
      const adapter = this.remote;
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
    if (call !== Call.Release && Number.isFinite(this.remote.lockDuration)) watchLapse(Math.max(ANSWER_WITHIN_MS, this.#untilLapse(job)));
    answer.then(
      () => {
        if (!settled()) return;
        this.#answered();
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
      if (this.#shut || this.closed) return; // its connections are closed: no outage to report
      this.#fault(`got no answer to ${what}`, new Error(`no answer within ${ANSWER_WITHIN_MS} ms`));
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
      this.#answered();
      this.#done(job);
      return;
    }
    this.#fault(`could not ${CALL_NAMES[call]} job ${job.id}`, error);
    if (call === Call.Release && (this.#quiescing !== undefined || this.#closing !== undefined || this.#shut)) {
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
      Math.max(0, Math.min(this.outage.backoffMs(), outcome ? this.#untilGivenUp(job) : Number.POSITIVE_INFINITY)),
    );
    if (!outcome) this.#releases.add(giveUp);
    const phase = this.core.phase;
    if (phase !== Phase.Started && phase !== Phase.Stopped && this.#closing === undefined) timer.unref?.();
  }

  /**
   * Ms until `job`'s outcome, failing to be recorded, is given up (see `#lapse`): once its lock
   * has lapsed and the engine has had {@link ANSWER_WITHIN_MS} to record it. The lapse is judged
   * from `confirmedAt`, an early estimate (a claim or renewal sent, not answered), so the engine
   * is first given the time it has to answer: an outage, not a slow start, gives an outcome up.
   */
  #untilGivenUp(job: RemoteJobRecord<T, R>): number {
    return Math.max(this.#untilLapse(job), job.outcomeSince + ANSWER_WITHIN_MS - this.host.clock.now());
  }

  /** Ms until `job`'s lock lapses unless a renewal is confirmed: `Infinity` for a lock that does not expire. */
  #untilLapse(job: RemoteJobRecord<T, R>): number {
    const lock = this.remote.lockDuration;
    return Number.isFinite(lock) ? job.confirmedAt + lock - this.host.clock.now() : Number.POSITIVE_INFINITY;
  }

  #done(job: RemoteJobRecord<T, R>): void {
    job.recording = false;
    const released = this.#releasing.delete(job);
    this.#let(job);
    this.#io--;
    this.#checkQuiet();
    if (!released && --this.#outcomes === 0) this.#rhost.recorded();
  }

  // ---------------------------------------------------------------- claims held, renewed, lost

  #hold(job: RemoteJobRecord<T, R>): void {
    this.#held.set(job.remote, job);
    const lock = this.remote.lockDuration;
    if (this.#extendTimer === undefined && Number.isFinite(lock)) {
      // Capped at the longest timer Node keeps: past it, Node fires every millisecond.
      this.#extendTimer = setInterval(() => this.#extend(), Math.min(MAX_TIMER_MS, Math.max(1, lock / 2)));
      this.#extendTimer.unref?.();
    }
  }

  #let(job: RemoteJobRecord<T, R>): void {
    this.#held.delete(job.remote);
    if (this.#held.size === 0 && this.#extendTimer !== undefined) {
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
    for (const job of this.#held.values()) if (!job.lockLost && !job.recording) jobs.push(job.remote);
    if (jobs.length === 0) return;
    this.#extending = true;
    const sentAt = this.host.clock.now();
    // biome-ignore lint/suspicious/noConfusingVoidType: what RemoteAdapter.extend resolves to
    let answer: Promise<void | readonly RemoteJob<T>[]>;
    try {
      answer = Promise.resolve(this.remote.extend(jobs));
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
          const job = this.#held.get(remote);
          // A renewal that answers late (after a newer one) must not set the confirmation back.
          if (job !== undefined && gone?.has(remote) !== true && sentAt > job.confirmedAt) job.confirmedAt = sentAt;
        }
        this.#answered();
        if (gone !== undefined) {
          let count = 0;
          for (const remote of gone) {
            const job = this.#held.get(remote);
            if (job !== undefined && !job.recording && this.#markLost(job)) count++;
          }
          if (count > 0) this.outage.lost(count); // one report for the renewal
        }
      },
      (error: unknown) => {
        settled();
        this.#extending = false;
        this.#fault('could not renew its claims', error);
      },
    );
  }

  #lost(job: RemoteJobRecord<T, R>): void {
    if (this.#markLost(job)) this.outage.lost();
  }

  /** Marks `job`'s claim lost (the caller reports it); returns false if it already was. */
  #markLost(job: RemoteJobRecord<T, R>): boolean {
    if (job.lockLost) return false;
    job.lockLost = true;
    // Not started: it is dropped, not run (the engine gives it to another consumer), and no
    // longer held (nothing to renew, record or release). One being handed back is not in the
    // core's jobs (never admitted, or taken back): its release settles it.
    if (!this.#releasing.has(job) && this.core.dropClaimed(job)) this.#let(job);
    return true;
  }

  // ---------------------------------------------------------------- faults

  #fault(what: string, error: unknown): void {
    if (!this.outage.fault(what, error)) return;
    this.#reachable(false);
    this.#rhost.degraded(this.outage.error);
  }

  #answered(): void {
    // An outage ends: first drop the claims whose locks lapsed meanwhile (the engine may have given
    // them to another consumer), so that none of them starts, and they count in its one report.
    if (this.outage.error !== undefined) this.#dropLapsed();
    if (!this.outage.answered()) return;
    this.#reachable(true);
    this.#rhost.wake();
  }

  /** Drops the claimed, unstarted jobs whose lock has not been confirmed for `lockDuration`. */
  #dropLapsed(): void {
    const lock = this.remote.lockDuration;
    if (!Number.isFinite(lock)) return;
    const now = this.host.clock.now();
    let count = 0;
    for (const job of this.#held.values()) {
      if (job.state === State.Waiting && !this.#releasing.has(job) && now - job.confirmedAt >= lock && this.#markLost(job)) count++;
    }
    if (count > 0) this.outage.lost(count);
  }

  /** The engine became unreachable or reachable again: the core's eligible set hears of it. */
  #reachable(reachable: boolean): void {
    this.core.setReachable(this, reachable);
    if (!reachable) this.#checkQuiet(); // a stop may have been waiting only for releases
  }

  // ---------------------------------------------------------------- stopping

  #whenQuiet(): Promise<void> {
    if (this.#isQuiet()) return Promise.resolve();
    const quiet = new Promise<void>((resolve) => this.#quietWaiters.push(resolve));
    this.#waitForEngine();
    return quiet;
  }

  /**
   * A stop or close waits for the engine to answer its releases and the claim it interrupted no
   * longer than {@link stopWaitMs} once none of its jobs runs, however the engine behaves: a
   * server that hangs with the connection open answers nothing and fails nothing. (Its jobs'
   * outcomes are given up by their own rule, `#lapse`: once the lock has lapsed and the call has
   * gone unanswered for {@link ANSWER_WITHIN_MS}.)
   */
  #waitForEngine(): void {
    if (this.#giveUpTimer !== undefined || this.running > 0 || this.#quietWaiters.length === 0) return;
    this.#giveUpTimer = setTimeout(() => this.#giveUp(), this.stopWaitMs);
  }

  /**
   * @internal How long a stop waits for the engine's answers to its hand-backs and its claim, ms:
   * the lock duration (by then the claims have lapsed, and the engine gives the jobs out again),
   * at most {@link ANSWER_WITHIN_MS} (no answer in that time reads as an outage anyway).
   */
  get stopWaitMs(): number {
    return Math.min(this.remote.lockDuration, ANSWER_WITHIN_MS);
  }

  /**
   * The stop has waited its time: the claim in flight is let go (what it gets is not held) and
   * the releases let their claims lapse (the engine gives the jobs out again). A hung engine is
   * a fault of the source, reported once.
   */
  #giveUp(): void {
    this.#giveUpTimer = undefined;
    if (this.#quietWaiters.length === 0 || this.#isQuiet()) return;
    if (this.running > 0) return; // armed again once none runs
    const claim = this.#claim;
    if (claim === undefined && this.#releases.size === 0) return; // outcomes only: their own rule
    this.#claim = undefined;
    claim?.abort();
    this.#fault('got no answer while stopping', new Error(`no answer within ${this.stopWaitMs} ms; stopped without waiting longer`));
    for (const giveUp of [...this.#releases]) giveUp();
    this.#checkQuiet();
  }

  #isQuiet(): boolean {
    // Releases to an engine out of reach may wait for it forever (a client queues them until it
    // reconnects): a stop does not wait for those. Closing the adapter ends them, and a release
    // that fails then lets the claim go (see `#callFailed`); its lock lapses in the engine.
    const waitedFor = this.unreachable ? this.#io - this.#releasing.size : this.#io;
    return this.running === 0 && waitedFor === 0 && this.#claim === undefined;
  }

  #checkQuiet(): void {
    if (this.#quietWaiters.length === 0) return;
    if (!this.#isQuiet()) {
      this.#waitForEngine();
      return;
    }
    if (this.#giveUpTimer !== undefined) {
      clearTimeout(this.#giveUpTimer);
      this.#giveUpTimer = undefined;
    }
    const waiters = this.#quietWaiters;
    this.#quietWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Stops every timer and closes the adapter; a failure to close is reported, never thrown. */
  async #shutDown(): Promise<void> {
    if (this.#claimTimer !== undefined) {
      clearTimeout(this.#claimTimer);
      this.#claimTimer = undefined;
    }
    if (this.#extendTimer !== undefined) {
      clearInterval(this.#extendTimer);
      this.#extendTimer = undefined;
    }
    // Bounded too: an adapter whose close waits for a hung engine must not hold the stop (it
    // should destroy its connections itself; `BullMQSource` does).
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        Promise.resolve().then(() => this.remote.close()),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, ANSWER_WITHIN_MS);
        }),
      ]);
    } catch (error) {
      this.#rhost.report(error);
    } finally {
      clearTimeout(timer);
    }
  }

  /** @internal Jobs it holds a claim on (unstarted, running, recording). */
  get heldCount(): number {
    return this.#held.size;
  }
}

/** @internal Whether a job belongs to a remote source. */
export function isRemoteJob(job: JobRecord): job is RemoteJobRecord {
  return job.home.isRemote;
}
