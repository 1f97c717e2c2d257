import { Phase } from '../core/worker-state.js';
import type { JobProgress, JobRecord } from '../handles/job.js';
import { Source, type SourceParts } from '../sources/source.js';
import type { RemoteAdapter, RemoteJob } from './adapter.js';
import { unbindAdapter } from './bind.js';
import { isLockLost, RemoteSourceError } from './errors.js';
import { ClaimedJobs } from './claimed-jobs.js';
import { ANSWER_WITHIN_MS, Outage } from './outage.js';
import { RemoteJobRecord } from './remote-job.js';
import { messageOf, safeString } from '../api/describe.js';

/** The default `prefetch` is the source's or the worker's concurrency, at most this. */
export const MAX_DEFAULT_PREFETCH = 64;

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
  /** Every job it holds a claim on, and the calls about them (renewals, outcomes, releases). */
  readonly #claims: ClaimedJobs<T, R>;
  /** The claim in flight (at most one). */
  #claim: AbortController | undefined = undefined;
  /** A timer before the next claim: backoff after a fault, or spacing after an empty answer. */
  #claimTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  #quietWaiters: (() => void)[] = [];
  /** Set once it has closed its adapter while the worker may not start jobs; the next claim reopens it. */
  #shut = false;
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
    this.#claims = new ClaimedJobs<T, R>(adapter, host, core, this.outage, {
      fault: (what, error) => this.#fault(what, error),
      answered: () => this.#answered(),
      checkQuiet: () => this.#checkQuiet(),
      recorded: () => remoteHost.recorded(),
      isStopping: () => this.#quiescing !== undefined || this.#closing !== undefined || this.#shut,
      isClosing: () => this.#closing !== undefined,
      isDisconnected: () => this.#shut || this.closed,
    });
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
    this.#claims.recordOutcome(job);
  }

  /** @internal Whether outcomes of its jobs are still on their way to the engine (see `RemoteHost.recorded`). */
  get recordingOutcomes(): boolean {
    return this.#claims.recordingOutcomes;
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
    this.#claims.release(job);
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
      this.#claims.hold(job);
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

  // ---------------------------------------------------------------- faults

  #fault(what: string, error: unknown): void {
    if (!this.outage.fault(what, error)) return;
    this.#reachable(false);
    this.#rhost.degraded(this.outage.error);
  }

  #answered(): void {
    // An outage ends: first drop the claims whose locks lapsed meanwhile (the engine may have given
    // them to another consumer), so that none of them starts, and they count in its one report.
    if (this.outage.error !== undefined) this.#claims.dropLapsed();
    if (!this.outage.answered()) return;
    this.#reachable(true);
    this.#rhost.wake();
  }

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
   * outcomes are given up by their own rule, in `ClaimedJobs`: once the lock has lapsed and the
   * call has gone unanswered for {@link ANSWER_WITHIN_MS}.)
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
    if (claim === undefined && !this.#claims.releasesPending) return; // outcomes only: their own rule
    this.#claim = undefined;
    claim?.abort();
    this.#fault('got no answer while stopping', new Error(`no answer within ${this.stopWaitMs} ms; stopped without waiting longer`));
    this.#claims.giveUpReleases();
    this.#checkQuiet();
  }

  #isQuiet(): boolean {
    // Releases to an engine out of reach may wait for it forever (a client queues them until it
    // reconnects): a stop does not wait for those. Closing the adapter ends them, and a release
    // that fails then lets the claim go (see `ClaimedJobs`); its lock lapses in the engine.
    const waitedFor = this.unreachable ? this.#claims.calls - this.#claims.releasing : this.#claims.calls;
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
    this.#claims.stopRenewing();
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
    return this.#claims.size;
  }
}

/** @internal Whether a job belongs to a remote source. */
export function isRemoteJob(job: JobRecord): job is RemoteJobRecord {
  return job.home.isRemote;
}
