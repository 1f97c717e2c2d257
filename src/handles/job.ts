import type { ParsedAddOptions } from '../sources/add-options.js';
import type { JobHandle, Job, JobProgress, JobStatus } from '../api/jobs.js';
import { CancelledError } from '../api/errors.js';
import { CancelReason, CoreJob, type JobHome, type KeyedJob, restartJobCount, State, STATUS, UNTIMED } from '../core/job-record.js';
import type { Clock } from '../core/clock.js';
import { keepShape } from '../core/shape-anchors.js';
import type { ContextScope } from '../shell/async-context.js';

export type { Job, JobGroup, JobHandle, JobProgress, JobStatus } from '../api/jobs.js';

/**
 * A job handle's source as the handle knows it: the public `Source` (`source.ts`), which makes the
 * handles and so is declared after them. The shell narrows it to `Source` (or `RemoteSource`)
 * where it needs more.
 *
 * @internal
 */
export interface HandleHome<T = unknown, R = unknown> extends JobHome {
  /** The worker that owns the source, through which every change of a job goes (`SourceHost`). */
  readonly host: {
    readonly clock: Clock;
    cancel(job: JobRecord, reason: unknown): boolean;
    progress(job: JobRecord, value: JobProgress): void;
  };
  /** A handler of one of its jobs reported progress (`Source.progressed`). */
  progressed(job: JobRecord<T, R>, value: JobProgress): void;
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
 * One job, and its handle: the object the handler gets is the one `add` returned. It extends the
 * core's record of the job ({@link CoreJob}), whose fields only the core changes, with what users
 * call: the result promise, the signal, `cancel`, `updateProgress`. Nothing here allocates unless
 * asked: the id string, the AbortController and the result promise are all made on first use.
 *
 * @internal
 */
export class JobRecord<T = unknown, R = unknown> extends CoreJob implements Job<T>, JobHandle<R> {
  declare readonly data: T;
  /** The source this job belongs to (the core's lane, which the public source extends). */
  declare readonly home: HandleHome<T, R>;
  /**
   * The async context of the call that added it (SPEC 13), in which its handler and events run;
   * `undefined` without one (`asyncContext: false`, a runtime without `node:async_hooks`), and
   * once the job has settled, so that a kept handle keeps no context alive. (Made by the core
   * record's constructor: a subclass with fields of its own would need one of its own, a call
   * more per job.)
   */
  declare scope: ContextScope | undefined;

  // An explicit constructor: Node 20's V8 runs a default derived one as `super(...arguments)`,
  // a spread per job (about 20 ns).
  constructor(home: HandleHome<T, R>, data: T, dueAt: number, state: State) {
    super(home, data, dueAt, state);
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

  get signal(): AbortSignal {
    const ext = this.extras();
    if (ext.controller === undefined) {
      ext.controller = new AbortController();
      if (ext.abortReason !== undefined) ext.controller.abort(ext.abortReason);
    }
    return ext.controller.signal;
  }

  /** The result promise, once someone asked for it. */
  override get promised(): ResultPromise<unknown> | undefined {
    return super.promised as ResultPromise<unknown> | undefined;
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
    const promised = this.promised;
    if (promised !== undefined) return promised;
    const state = this.state;
    let value = this.value;
    if (state === State.Cancelled && value instanceof CancelReason) value = new CancelledError(value.reason);
    const pair = new ResultPromise(state >= State.Succeeded ? { ok: state === State.Succeeded, value } : undefined);
    this.value = value;
    this.adoptOutcome(pair);
    return pair;
  }
}

/**
 * A job of a queue bound with `keys`: the one with a key. Only such queues make them, so a job
 * of any other source carries no key field at all.
 *
 * @internal
 */
export class KeyedJobRecord<T = unknown, R = unknown> extends JobRecord<T, R> implements KeyedJob {
  readonly keyName: string;
  readonly #priority: number;
  /**
   * The state of its key while the job waits or runs (which keeps the key active, so this is
   * the live one): spares a lookup by name at each transition. Set by `KeyedJobs`.
   */
  keyState: object | undefined = undefined;
  /** The next due job of its key in a keyed FIFO queue (the key's list runs through its jobs, see `KeyFifo`). */
  nextInKey: KeyedJob | undefined = undefined;

  constructor(home: HandleHome<T, R>, data: T, priority: number, key: string) {
    super(home, data, UNTIMED, State.Due);
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

  constructor(home: HandleHome<T, R>, data: T, priority: number) {
    super(home, data, UNTIMED, State.Due);
    this.#priority = priority;
  }

  override get priority(): number {
    return this.#priority;
  }
}

// Job records and their result promises come and go with every burst; these keep their maps
// (see `shape-anchors.ts`). No anchor is ever in a source, and jobs still count from 1.
keepShape(new JobRecord(undefined as unknown as HandleHome, undefined, UNTIMED, State.Due));
keepShape(new PriorityJobRecord(undefined as unknown as HandleHome, undefined, 1));
keepShape(new KeyedJobRecord(undefined as unknown as HandleHome, undefined, 0, ''));
keepShape(new ResultPromise());
restartJobCount();

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
  source: HandleHome<T, R>,
  data: T,
  priority: number,
  parsed: ParsedAddOptions | undefined,
  key?: string,
): JobRecord<T, R> {
  const job =
    key !== undefined
      ? new KeyedJobRecord<T, R>(source, data, priority, key)
      : priority === 0
        ? new JobRecord<T, R>(source, data, UNTIMED, State.Due)
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
