import type { ThreadTransferable } from './pool/transferable.js';
import type { ParsedAddOptions } from './add-options.js';
import { CancelledError } from './errors.js';
import type { Deadline } from './core/deadlines.js';
import type { Source } from './source.js';
import { keepShape } from './internal/shape-anchors.js';
import type { ContextScope } from './shell/async-context.js';

/**
 * A progress report (BullMQ's type): a number (a percentage, say), a string, a boolean or an
 * object (`{ done: 3, total: 10 }`). In threads it is structured-cloned.
 */
export type JobProgress = number | string | boolean | object;

/** Where a job is in its life. */
export type JobStatus = 'waiting' | 'delayed' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/**
 * What a handler receives: one job to do. It is the same object as the job's
 * {@link JobHandle}, so it is a thenable too: a promise resolved with it waits for the job's
 * result. Keep it out of an `async` function's return value (and a `resolve(...)`): wrap it
 * (`{ job }`), or a handler that returns it waits for itself.
 *
 * @typeParam T - the job's data
 */
export interface Job<T> {
  /** The job's id: the `id` add option, or a generated one unique within the process. */
  readonly id: string;
  /** The data given to `add`. */
  readonly data: T;
  /** Which attempt this is, starting at 1. */
  readonly attempt: number;
  /**
   * Aborts when this attempt should stop: with a {@link CancelledError} as the reason when the job
   * is cancelled while it runs (`handle.cancel()`, its `signal` add option, a registry shutdown
   * at its timeout), with a {@link TimeoutError} when the attempt outlives its `timeout` (the
   * worker option or the add option). Pass it on to `fetch` and friends; a handler that ignores
   * it keeps its slot until it returns. Each attempt gets a fresh signal.
   */
  readonly signal: AbortSignal;
  /** Name of the source (queue, priority queue or subscription) the job came from. */
  readonly source: string;
  /** Its key (`String(key)`) in a queue bound with `keys` (SPEC 10); `undefined` elsewhere. */
  readonly key: string | undefined;
  /**
   * Reports progress: records `value` as the handle's `progress` and emits `progress (job,
   * value)`. A report after the job has settled (or between attempts) is ignored; it never
   * throws, except for `undefined`, which is not a report (a `TypeError`).
   *
   * @example
   * ```ts
   * new Worker(async (job: Job<string[]>) => {
   *   for (const [i, file] of job.data.entries()) {
   *     await convert(file);
   *     job.updateProgress({ done: i + 1, total: job.data.length });
   *   }
   * });
   * ```
   */
  updateProgress(value: JobProgress): void;
}

/**
 * What `add` returns: a handle on one job. Asking for nothing costs nothing: no promise exists
 * until {@link JobHandle.result}, {@link JobHandle.settled} or `then` (an `await`) is called, and
 * a job whose result nobody asked for never raises an unhandled rejection.
 *
 * A handle is a thenable: `await queue.add(data)` gives what the handler returned, as with
 * p-queue and p-limit (it is `await handle.result()`). The flip side of any thenable: a
 * promise resolved with a handle waits for that job's result, so an `async` function (a
 * handler, say) that returns a handle returns the job's result, not the handle; and a handler
 * that returns its own job (`async (job) => job`) waits for itself and never settles. Return
 * the handle in an object (`{ handle }`) to pass it on as it is.
 *
 * `console.log(handle)` prints `JobHandle { id, source, status, attempts }`.
 *
 * @typeParam R - what the handler returns
 * @example
 * ```ts
 * const sum = await queue.add(async () => 1 + 1); // 2
 * const handle = queue.add({ url });
 * handle.status;                // 'waiting'
 * const body = await handle.result();
 * ```
 */
export interface JobHandle<R> extends PromiseLike<R> {
  /** The job's id: the `id` add option, or a generated one unique within the process. */
  readonly id: string;
  /** Where the job is now. */
  readonly status: JobStatus;
  /** How many attempts have started so far (0 while it has not started). */
  readonly attempts: number;
  /** The latest value its handler reported with `updateProgress`: `undefined` until the first report, kept across retries. */
  readonly progress: JobProgress | undefined;
  /** Its key in a queue bound with `keys` (`String(key)`, see SPEC 10), else `undefined`. */
  readonly key: string | undefined;
  /**
   * Resolves with what the handler returned; rejects with the job's last error, or with a
   * {@link CancelledError} when it was cancelled. The same promise is returned on every call.
   */
  result(): Promise<R>;
  /** Resolves once the job has succeeded, failed or been cancelled. Never rejects. */
  settled(): Promise<void>;
  /**
   * Cancels the job. A waiting or delayed job is removed from its source; a running job's
   * `signal` is aborted (its slot stays taken until its handler returns). Either way the handle
   * settles `'cancelled'` at once. Returns false, and does nothing, if it had already settled.
   */
  cancel(reason?: unknown): boolean;
  /**
   * Makes the handle awaitable: `await handle` is `await handle.result()` (the same promise
   * underneath: nothing is made until it is called).
   */
  then<TResult1 = R, TResult2 = never>(
    onfulfilled?: ((value: R) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2>;
}

/**
 * What `addAll` returns: the handles of every job added, in add order. Like a
 * {@link JobHandle}, it is a thenable: `await queue.addAll(items)` is
 * `await group.result()` (with the same caveat: an `async` function returning a group returns
 * its results).
 *
 * @typeParam R - what the handler returns
 */
export interface JobGroup<R> extends PromiseLike<R[]> {
  /** One handle per job, in add order. */
  readonly handles: readonly JobHandle<R>[];
  /** Resolves with every result in add order; rejects with the first error, like `Promise.all`. */
  result(): Promise<R[]>;
  /** Resolves once every job has settled. Never rejects. */
  settled(): Promise<void>;
  /** Makes the group awaitable: `await group` is `await group.result()`. */
  then<TResult1 = R[], TResult2 = never>(
    onfulfilled?: ((value: R[]) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2>;
}

/** The key Node's `util.inspect` (and so `console.log`) looks for; a registered symbol, so no `node:util` import. */
const INSPECT = Symbol.for('nodejs.util.inspect.custom');

/** What `console.log(handle)` shows of a job: the few fields a reader needs, not its internals. @internal */
class JobHandleView {
  readonly id: string;
  readonly source: string;
  readonly status: JobStatus;
  readonly attempts: number;
  constructor(job: JobHandle<unknown> & { readonly source: string }) {
    this.id = job.id;
    this.source = job.source;
    this.status = job.status;
    this.attempts = job.attempts;
  }
}
// Node prints an object by its constructor's name: `JobHandle { id: ..., ... }`.
Object.defineProperty(JobHandleView, 'name', { value: 'JobHandle' });

/**
 * Told once when a job settles, after its own promises (see `JobExtras.watcher`): how a batch of
 * jobs is followed without a promise per job.
 *
 * @internal
 */
export interface SettleWatcher {
  jobSettled(job: JobRecord): void;
}

/** Internal job states; numbers keep the hot path's comparisons cheap. @internal */
export enum State {
  Waiting = 0,
  Delayed = 1,
  Running = 2,
  Succeeded = 3,
  Failed = 4,
  Cancelled = 5,
}

const STATUS: readonly JobStatus[] = ['waiting', 'delayed', 'running', 'succeeded', 'failed', 'cancelled'];

let capturedResolve: (value: never) => void = noop;
let capturedReject: (error: unknown) => void = noop;

/** The executor of every result promise: hands its resolvers over without a closure per job. */
function captureResolvers(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/**
 * A job's result promise and its resolvers, made when someone first asks for them. Both are
 * kept: rejecting through `resolve` (with a thenable that rejects) would save the 56 bytes of the
 * reject function per awaited job, but the rejection would come a microtask later, after
 * `waitUntilIdle()` and after the results of jobs that settled after it (see bench/RESULTS.md,
 * "Awaited results").
 *
 * @internal
 */
class ResultPromise<R> {
  readonly promise: Promise<R>;
  readonly resolve: (value: R) => void;
  readonly reject: (error: unknown) => void;
  settledPromise: Promise<void> | undefined = undefined;
  /** The job's `value`, kept here once the job has this pair (see `JobRecord.value`). */
  value: unknown = undefined;

  /** A pending promise, or one already settled with `settledWith` when the job has settled. */
  constructor(settledWith?: { ok: boolean; value: unknown }) {
    if (settledWith === undefined) {
      this.promise = new Promise<R>(captureResolvers);
      this.resolve = capturedResolve as (value: R) => void;
      this.reject = capturedReject;
    } else {
      this.promise = settledWith.ok ? Promise.resolve(settledWith.value as R) : Promise.reject(settledWith.value);
      this.resolve = noop;
      this.reject = noop;
    }
  }
}

function noop(): void {}

/**
 * The `dueAt` of a job that was due on add while its source held no timed job: it sorts before
 * every timed job, which is right because it was added before any of them. A small negative
 * integer, not -Infinity, because a small integer is stored in the job itself while a double
 * would be boxed; below zero, because the monotonic clock may read 0 (a virtual one does).
 *
 * @internal
 */
export const UNTIMED = -1;

/**
 * What only some jobs need: a signal, a promise, per-job retry or timeout, an attempt that
 * failed before its handler returned. Kept off the job itself so that a plain queued job stays
 * small; made on first use.
 *
 * @internal
 */
export class JobExtras {
  controller: AbortController | undefined = undefined;
  abortReason: unknown = undefined;
  /** Told when this job settles: the batch that follows it (its add signal, its addAll group). */
  watcher: SettleWatcher | undefined = undefined;
  /** The `timeout` add option. */
  timeout: number | undefined = undefined;
  /** The `retry` add option. */
  retry: object | undefined = undefined;
  /** The `id` add option: a user id, looked up in its source while the job is in use (see `job-ids.ts`). */
  id: string | undefined = undefined;
  /** The generated id of the dead letter this job was redriven from: kept, never looked up. */
  keptId: string | undefined = undefined;
  /** The latest `updateProgress` value. */
  progress: JobProgress | undefined = undefined;
  /** The `transfer` add option (threads). */
  transfer: readonly ThreadTransferable[] | undefined = undefined;
  /** A redriven job waiting for this one's handler to settle before it joins its source. */
  successor: JobRecord | undefined = undefined;
  /** Set while this job waits for its predecessor's handler (see `Core.hold`). */
  held = false;
  /** That predecessor, while this job is held: the id goes back to it if this job leaves unheld. */
  heldBehind: JobRecord | undefined = undefined;
  /** When it was held (the worker's clock): it is due from then. */
  heldSince = 0;
  /** The running attempt's deadline, when it has a timeout. */
  deadline: Deadline | undefined = undefined;
  /** Set when the running attempt failed before its handler returned (a timeout) and will be retried. */
  attemptError: unknown = undefined;
  /** Whether `attemptError` is set (the error itself may be any value). */
  attemptFailed = false;
  /** The wait before the retry that `attemptError` calls for. */
  retryDelay = 0;
}

/** Why a job was cancelled, until someone asks for the `CancelledError` itself. @internal */
export class CancelReason {
  readonly reason: unknown;
  constructor(reason: unknown) {
    this.reason = reason;
  }

  static of(reason: unknown): CancelReason {
    return reason === undefined ? NO_REASON : new CancelReason(reason);
  }
}

const NO_REASON = new CancelReason(undefined);

const STATE_MASK = 0b111;
const IN_FLIGHT = 0b1000;
/** Set once `#outcome` holds the result promise's pair instead of the value. */
const PROMISED = 0b10000;
/** Set when the job is timed in full (a quiet worker times every job: see `Sampler` in `stats.ts`). */
const TIMED_IN_FULL = 0b100000;
const ATTEMPTS_SHIFT = 6;

/** The next job's `seq`. */
let nextSeq = 1;

/**
 * One job, and its handle: the object the handler gets is the one `add` returned.
 * Nothing here allocates unless asked: the id string, the AbortController and the result promise
 * are all made on first use.
 *
 * @internal
 */
export class JobRecord<T = unknown, R = unknown> implements Job<T>, JobHandle<R> {
  /** Process-wide add order: the last tie-break everywhere. */
  readonly seq: number;
  readonly data: T;
  /** The source this job belongs to. */
  readonly home: Source<T, R>;
  /** When the job becomes (or became) due, in epoch ms; {@link UNTIMED} when it was due on add and no ordering needed the time. */
  dueAt: number;
  /**
   * `state` (bits 0-2), `inFlight` (bit 3), whether {@link #outcome} holds the result promise
   * (bit 4), whether it is timed in full (bit 5) and `attempts` (the rest) packed in one small
   * integer: five fields in one property keep a queued job 24 bytes smaller.
   */
  #bits: number;
  /**
   * The job's {@link value} or, once someone asked for the result promise, that promise's pair,
   * which then keeps the value: one field for both keeps every job 8 bytes smaller, and only a
   * job whose result was asked for pays the 8 bytes, on its pair. (No `#private` method on this
   * class: V8 would add a brand slot to every job for it.)
   */
  #outcome: unknown = undefined;
  /** Rarely needed state; see {@link JobExtras}. */
  ext: JobExtras | undefined = undefined;
  /**
   * The async context of the call that added it (SPEC 13), in which its handler and events run;
   * `undefined` without one (`asyncContext: false`, a runtime without `node:async_hooks`), and
   * once the job has settled, so that a kept handle keeps no context alive.
   */
  scope: ContextScope | undefined = undefined;

  constructor(home: Source<T, R>, data: T, dueAt: number, state: State) {
    this.seq = nextSeq++;
    this.home = home;
    this.data = data;
    this.dueAt = dueAt;
    this.#bits = state;
  }

  /**
   * Order within a priority queue (lower first): 0 here, as in every FIFO source. A job of
   * another priority is a {@link PriorityJobRecord} (or keyed), so FIFO jobs carry no field for it.
   */
  get priority(): number {
    return 0;
  }

  /** The result once succeeded, the error once failed or cancelled. */
  get value(): unknown {
    const outcome = this.#outcome;
    return (this.#bits & PROMISED) === 0 ? outcome : (outcome as ResultPromise<unknown>).value;
  }

  set value(value: unknown) {
    if ((this.#bits & PROMISED) === 0) this.#outcome = value;
    else (this.#outcome as ResultPromise<unknown>).value = value;
  }

  /** The result promise, once someone asked for it. */
  get promised(): ResultPromise<unknown> | undefined {
    return (this.#bits & PROMISED) === 0 ? undefined : (this.#outcome as ResultPromise<unknown>);
  }

  /** Where the job is (see {@link State}). */
  get state(): State {
    return this.#bits & STATE_MASK;
  }

  set state(state: State) {
    this.#bits = (this.#bits & ~STATE_MASK) | state;
  }

  /** True from the start of an attempt until its handler settles, even if the job was cancelled meanwhile. */
  get inFlight(): boolean {
    return (this.#bits & IN_FLIGHT) !== 0;
  }

  set inFlight(inFlight: boolean) {
    this.#bits = inFlight ? this.#bits | IN_FLIGHT : this.#bits & ~IN_FLIGHT;
  }

  /**
   * Whether the stats time this job as itself (weight 1), chosen at add while its worker is quiet;
   * otherwise it is timed only if `isSampled(seq)`, standing for `SAMPLE_EVERY` jobs.
   */
  get timedInFull(): boolean {
    return (this.#bits & TIMED_IN_FULL) !== 0;
  }

  /** Marks the job timed in full (at add, before anything reads it). */
  timeInFull(): void {
    this.#bits |= TIMED_IN_FULL;
  }

  /** Attempts started so far. */
  get attempts(): number {
    return this.#bits >>> ATTEMPTS_SHIFT;
  }

  /** The user id, or a generated one: the decimal `seq`, a form no user id takes (see `checkJobId`). */
  get id(): string {
    const ext = this.ext;
    if (ext === undefined) return `${this.seq}`;
    return ext.id ?? ext.keptId ?? `${this.seq}`;
  }

  get progress(): JobProgress | undefined {
    return this.ext?.progress;
  }

  updateProgress(value: JobProgress): void {
    if ((value === undefined || value === null) && this.state === State.Running) {
      throw new TypeError(`qmux: updateProgress(value) needs a value (a number, string, boolean or object), got ${value}`);
    }
    this.home.host.progress(this, value);
  }

  get status(): JobStatus {
    // Due once its time has passed, even before the worker next looks (every slot may be in use).
    if (this.state === State.Delayed && this.dueAt <= this.home.host.clock.now()) return 'waiting';
    return STATUS[this.state] as JobStatus;
  }

  get attempt(): number {
    return this.attempts;
  }

  get source(): string {
    return this.home.name;
  }

  get key(): string | undefined {
    return undefined;
  }

  get signal(): AbortSignal {
    const ext = this.extras();
    if (ext.controller === undefined) {
      ext.controller = new AbortController();
      if (ext.abortReason !== undefined) ext.controller.abort(ext.abortReason);
    }
    return ext.controller.signal;
  }

  /** The rarely needed part, made on first use. */
  extras(): JobExtras {
    return (this.ext ??= new JobExtras());
  }

  /**
   * Starts an attempt of a waiting job that is not in flight: running, in flight and one more
   * attempt, in one write of the packed field; and a fresh signal, nothing failed yet. Returns
   * false, changing nothing, if the job is not waiting or is still in flight (the core calls it
   * as the attempt starts, and throws then).
   */
  claim(): boolean {
    const bits = this.#bits;
    if ((bits & (STATE_MASK | IN_FLIGHT)) !== State.Waiting) return false;
    this.#bits = (bits | State.Running | IN_FLIGHT) + (1 << ATTEMPTS_SHIFT);
    const ext = this.ext;
    if (ext === undefined) return true;
    ext.controller = undefined;
    ext.abortReason = undefined;
    ext.attemptError = undefined;
    ext.attemptFailed = false;
    return true;
  }

  /** Whether the job is running with its attempt in flight (neither cancelled nor settled meanwhile). */
  get runningInFlight(): boolean {
    return (this.#bits & (STATE_MASK | IN_FLIGHT)) === (State.Running | IN_FLIGHT);
  }

  /** A running attempt in flight succeeded: succeeded and no longer in flight, in one write. */
  succeedInFlight(): void {
    this.#bits = (this.#bits & ~(STATE_MASK | IN_FLIGHT)) | State.Succeeded;
  }

  result(): Promise<R> {
    return this.outcome().promise as Promise<R>;
  }

  settled(): Promise<void> {
    const outcome = this.outcome();
    return (outcome.settledPromise ??= outcome.promise.then(noop, noop));
  }

  cancel(reason?: unknown): boolean {
    return this.home.host.cancel(this, reason);
  }

  // biome-ignore lint/suspicious/noThenProperty: a thenable handle on purpose: `await queue.add(x)` gives the result (the p-queue habit)
  then<TResult1 = R, TResult2 = never>(
    onfulfilled?: ((value: R) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2> {
    return (this.outcome().promise as Promise<R>).then(onfulfilled, onrejected);
  }

  /** `console.log(handle)`: `JobHandle { id, source, status, attempts }` rather than the record's internals. */
  [INSPECT](): object {
    return new JobHandleView(this);
  }

  /** The promise pair of this job, made on first use. */
  outcome(): ResultPromise<unknown> {
    if ((this.#bits & PROMISED) !== 0) return this.#outcome as ResultPromise<unknown>;
    const state = this.state;
    let value = this.#outcome;
    if (state === State.Cancelled && value instanceof CancelReason) value = new CancelledError(value.reason);
    const pair = new ResultPromise(state >= State.Succeeded ? { ok: state === State.Succeeded, value } : undefined);
    pair.value = value;
    this.#outcome = pair;
    this.#bits |= PROMISED;
    return pair;
  }
}

/**
 * A job of a queue bound with `keys`: the one with a key. Only such queues make them, so a job
 * of any other source carries no key field at all.
 *
 * @internal
 */
export class KeyedJobRecord<T = unknown, R = unknown> extends JobRecord<T, R> {
  readonly keyName: string;
  readonly #priority: number;
  /**
   * The state of its key while the job waits or runs (which keeps the key active, so this is
   * the live one): spares a lookup by name at each transition. Set by `KeyedJobs`.
   */
  keyState: object | undefined = undefined;
  /** The next due job of its key in a keyed FIFO queue (the key's list runs through its jobs, see `KeyFifo`). */
  nextInKey: KeyedJobRecord | undefined = undefined;

  constructor(home: Source<T, R>, data: T, priority: number, key: string) {
    super(home, data, UNTIMED, State.Waiting);
    this.keyName = key;
    this.#priority = priority;
  }

  override get key(): string {
    return this.keyName;
  }

  override get priority(): number {
    return this.#priority;
  }
}

/**
 * A job of a priority queue whose priority is not 0 (a job of priority 0 is a plain
 * {@link JobRecord}): the only jobs without a key that carry a priority.
 *
 * @internal
 */
export class PriorityJobRecord<T = unknown, R = unknown> extends JobRecord<T, R> {
  readonly #priority: number;

  constructor(home: Source<T, R>, data: T, priority: number) {
    super(home, data, UNTIMED, State.Waiting);
    this.#priority = priority;
  }

  override get priority(): number {
    return this.#priority;
  }
}

// Job records and their result promises come and go with every burst; these keep their maps
// (see `shape-anchors.ts`). No anchor is ever in a source, and jobs still count from 1.
keepShape(new JobRecord(undefined as unknown as Source, undefined, UNTIMED, State.Waiting));
keepShape(new PriorityJobRecord(undefined as unknown as Source, undefined, 1));
keepShape(new KeyedJobRecord(undefined as unknown as Source, undefined, 0, ''));
keepShape(new ResultPromise());
nextSeq = 1;

/**
 * The shell's side of a job that has settled: settle its promise if anybody asked for one, then
 * tell the batch that follows it (its signal, its group; see `job-group.ts`).
 *
 * @internal
 */
export function deliverOutcome(job: JobRecord): void {
  const outcome = job.promised;
  if (outcome !== undefined) {
    if (job.state === State.Succeeded) outcome.resolve(job.value);
    else outcome.reject(job.value);
  }
  const ext = job.ext;
  if (ext !== undefined && ext.watcher !== undefined) {
    const watcher = ext.watcher;
    ext.watcher = undefined; // a handle kept alone does not keep its whole batch alive
    watcher.jobSettled(job);
  }
}

/** Aborts the running attempt's signal with `reason` (cancellation, timeout, shutdown). @internal */
export function abortSignalOf(job: JobRecord, reason: unknown): void {
  const ext = job.extras();
  ext.abortReason = reason;
  ext.controller?.abort(reason);
}

/**
 * A new job record for `source`, carrying the add options that live in its extras (id, timeout,
 * retry, transfer), and its `key` in a keyed queue. It joins nothing: the core admits it.
 *
 * @internal
 */
export function newJobRecord<T, R>(
  source: Source<T, R>,
  data: T,
  priority: number,
  parsed: ParsedAddOptions | undefined,
  key?: string,
): JobRecord<T, R> {
  const job =
    key !== undefined
      ? new KeyedJobRecord<T, R>(source, data, priority, key)
      : priority === 0
        ? new JobRecord<T, R>(source, data, UNTIMED, State.Waiting)
        : new PriorityJobRecord<T, R>(source, data, priority);
  if (parsed?.needsExtras) {
    const ext = job.extras();
    ext.id = parsed.id;
    ext.timeout = parsed.timeout;
    ext.retry = parsed.retry;
    ext.transfer = parsed.transfer;
  }
  return job;
}
