import type { ParsedAddOptions } from '../sources/add-options.js';
import type { JobGroup, JobHandle, JobRecord } from './job.js';
import { State, type SettleWatcher } from '../core/job-record.js';

/** A promise with its resolvers: one per group and per call that asked, never one per job. */
interface Pending<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function pending<T>(): Pending<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * Jobs that someone follows together: those of one `addAll` (the group it returns), of one
 * `publish`, or a single job added with a `signal`.
 *
 * It counts the jobs not settled yet through each job's settle hook (`JobExtras.watcher`), not
 * through a promise per job: `Promise.all` over an `addAll` of 2,097,151 jobs or more throws a
 * `RangeError`, and a promise and a reaction per job cost several times the job itself. Nothing is
 * counted until `result()`, `settled()` or a signal needs it, so a group nobody asks about costs
 * nothing. An add signal gets one abort listener for all the jobs, removed once they have all
 * settled: one per job made Node warn (`MaxListenersExceededWarning`) for any batch over 10.
 *
 * @internal
 */
export class HandleGroup<R = unknown> implements JobGroup<R>, SettleWatcher {
  /** One handle per job, in add order. */
  readonly handles: readonly JobHandle<R>[];
  /** The same array as `handles`, seen as what it is. */
  readonly #jobs: readonly JobRecord<unknown, R>[];
  /** Jobs not settled yet, counted once something needs it; -1 before. */
  #unsettled = -1;
  /** The add signal and its listener, while the listener is on. */
  #signal: AbortSignal | undefined = undefined;
  #onAbort: (() => void) | undefined = undefined;
  #settled: Pending<void> | undefined = undefined;
  #result: Pending<R[]> | undefined = undefined;
  #resultDecided = false;

  /** @param signal - cancels every job not settled yet when it aborts */
  constructor(jobs: readonly JobRecord<unknown, R>[], signal?: AbortSignal) {
    this.handles = jobs;
    this.#jobs = jobs;
    if (signal !== undefined) this.#follow(signal);
  }

  /** Resolves with every result in add order; rejects with the first error (in settle order), like `Promise.all`. */
  result(): Promise<R[]> {
    if (this.#result !== undefined) return this.#result.promise;
    const result = (this.#result = pending<R[]>());
    this.#watch();
    // As Promise.all called now would: among jobs already settled, the first failure in add order.
    const failed = this.#jobs.find((job) => job.state === State.Failed || job.state === State.Cancelled);
    if (failed !== undefined) this.#fail(failed);
    else if (this.#unsettled === 0) this.#succeed();
    return result.promise;
  }

  /** Makes the group awaitable: `await group` is `await group.result()`. */
  // biome-ignore lint/suspicious/noThenProperty: a thenable group on purpose, as a job handle
  then<TResult1 = R[], TResult2 = never>(
    onfulfilled?: ((value: R[]) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2> {
    return this.result().then(onfulfilled, onrejected);
  }

  /** Resolves once every job has settled. Never rejects. */
  settled(): Promise<void> {
    if (this.#settled === undefined) {
      this.#settled = pending<void>();
      this.#watch();
      if (this.#unsettled === 0) this.#settled.resolve();
    }
    return this.#settled.promise;
  }

  /** @internal One of the jobs settled (called once per job, by `deliverOutcome`). */
  jobSettled(job: JobRecord): void {
    if (job.state !== State.Succeeded && this.#result !== undefined) this.#fail(job);
    if (--this.#unsettled === 0) this.#allSettled();
  }

  /** Starts counting: every job not settled yet tells this batch when it settles. */
  #watch(): void {
    if (this.#unsettled >= 0) return;
    let unsettled = 0;
    for (const job of this.#jobs) {
      if (job.state >= State.Succeeded) continue;
      // A job is in one batch only: its addAll's, its publish's, or its own signal's.
      job.extras().watcher = this;
      unsettled++;
    }
    this.#unsettled = unsettled;
  }

  #follow(signal: AbortSignal): void {
    this.#watch();
    if (this.#unsettled === 0) return; // all cancelled in place already (an aborted signal), or none
    if (signal.aborted) {
      // Aborted after the jobs were checked (by user code run while they were added): cancel them now.
      this.#cancelAll(signal.reason);
      return;
    }
    const onAbort = (): void => {
      this.#signal = undefined;
      this.#cancelAll(signal.reason);
    };
    this.#signal = signal;
    this.#onAbort = onAbort;
    signal.addEventListener('abort', onAbort, { once: true });
  }

  #cancelAll(reason: unknown): void {
    // Each cancel may run listeners that settle other jobs of the batch: check each as we come to it.
    for (const job of this.#jobs) if (job.state < State.Succeeded) job.cancel(reason);
  }

  #allSettled(): void {
    const signal = this.#signal;
    if (signal !== undefined) {
      this.#signal = undefined;
      signal.removeEventListener('abort', this.#onAbort as () => void);
      this.#onAbort = undefined;
    }
    this.#settled?.resolve();
    if (this.#result !== undefined) this.#succeed();
  }

  #fail(job: JobRecord): void {
    if (this.#resultDecided) return;
    this.#resultDecided = true;
    // The job's own promise carries the error its handle gives (a CancelledError is made on demand).
    job.result().then(undefined, (this.#result as Pending<R[]>).reject);
  }

  #succeed(): void {
    if (this.#resultDecided) return;
    this.#resultDecided = true;
    const jobs = this.#jobs;
    const values = new Array<R>(jobs.length);
    for (let i = 0; i < jobs.length; i++) values[i] = (jobs[i] as JobRecord<unknown, R>).value as R;
    (this.#result as Pending<R[]>).resolve(values);
  }
}

/**
 * Cancels every job of `jobs` not settled yet when `signal` aborts, with one listener for all of
 * them, removed once they have all settled (or at once, if the signal has already aborted).
 *
 * @internal
 */
export function followSignal(jobs: readonly JobRecord[], signal: AbortSignal): void {
  new HandleGroup(jobs, signal); // kept alive by its listener, as long as it is needed
}

/**
 * The add options each job of a batch is enqueued with: without a live signal, which the batch
 * follows once for all of them. An aborted signal stays, so each job is cancelled in place as
 * with a single add.
 *
 * @internal
 */
export function withoutLiveSignal(parsed: ParsedAddOptions | undefined): ParsedAddOptions | undefined {
  return parsed?.signal === undefined || parsed.signal.aborted ? parsed : { ...parsed, signal: undefined };
}
