import { CancelledError } from './errors.js';
import type { Source } from './source.js';

/** Where a job is in its life. */
export type JobStatus = 'waiting' | 'delayed' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/**
 * What a handler receives: one job to do.
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
   * Aborts when the job is cancelled while it runs (`handle.cancel()`, its `signal` add option)
   * with a {@link CancelledError} as the reason. Pass it on to `fetch` and friends.
   */
  readonly signal: AbortSignal;
  /** Name of the source (queue, priority queue or subscription) the job came from. */
  readonly source: string;
}

/**
 * What `add` returns: a handle on one job. Asking for nothing costs nothing: no promise exists
 * until {@link JobHandle.result} or {@link JobHandle.settled} is called, and a job whose result
 * nobody asked for never raises an unhandled rejection.
 *
 * @typeParam R - what the handler returns
 * @example
 * ```ts
 * const handle = queue.add({ url });
 * handle.status;                // 'waiting'
 * const body = await handle.result();
 * ```
 */
export interface JobHandle<R> {
  /** The job's id: the `id` add option, or a generated one unique within the process. */
  readonly id: string;
  /** Where the job is now. */
  readonly status: JobStatus;
  /** How many attempts have started so far (0 while it has not started). */
  readonly attempts: number;
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
}

/**
 * What `addAll` returns: the handles of every job added, in add order.
 *
 * @typeParam R - what the handler returns
 */
export interface JobGroup<R> {
  /** One handle per job, in add order. */
  readonly handles: readonly JobHandle<R>[];
  /** Resolves with every result in add order; rejects with the first error, like `Promise.all`. */
  result(): Promise<R[]>;
  /** Resolves once every job has settled. Never rejects. */
  settled(): Promise<void>;
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

/** Lazily created when someone asks for a promise. @internal */
interface Outcome<R> {
  promise: Promise<R>;
  resolve(value: R): void;
  reject(error: unknown): void;
  settledPromise: Promise<void> | undefined;
}

function noop(): void {}

/**
 * The `dueAt` of a job that was due on add while its source held no timed job: it sorts before
 * every timed job, which is right because it was added before any of them.
 *
 * @internal
 */
export const UNTIMED = -Infinity;

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
  /** Order within a priority queue (lower first); 0 in FIFO sources. */
  readonly priority: number;
  state: State;
  /** Attempts started so far. */
  attempts = 0;
  /** True from the start of an attempt until its handler settles, even if the job was cancelled meanwhile. */
  inFlight = false;
  #id: string | undefined;
  #controller: AbortController | undefined = undefined;
  #abortReason: unknown = undefined;
  #outcome: Outcome<R> | undefined = undefined;
  #value: unknown = undefined;
  #externalSignal: AbortSignal | undefined = undefined;
  #onExternalAbort: (() => void) | undefined = undefined;

  constructor(home: Source<T, R>, data: T, priority: number, dueAt: number, state: State, id: string | undefined) {
    this.seq = nextSeq++;
    this.home = home;
    this.data = data;
    this.priority = priority;
    this.dueAt = dueAt;
    this.state = state;
    this.#id = id;
  }

  get id(): string {
    return (this.#id ??= `${this.seq}`);
  }

  get status(): JobStatus {
    return STATUS[this.state] as JobStatus;
  }

  get attempt(): number {
    return this.attempts;
  }

  get source(): string {
    return this.home.name;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Whether the job has succeeded, failed or been cancelled. */
  get isSettled(): boolean {
    return this.state >= State.Succeeded;
  }

  result(): Promise<R> {
    return this.#outcomeFor().promise;
  }

  settled(): Promise<void> {
    const outcome = this.#outcomeFor();
    return (outcome.settledPromise ??= outcome.promise.then(noop, noop));
  }

  cancel(reason?: unknown): boolean {
    const state = this.state;
    if (state >= State.Succeeded) return false;
    this.cancelInPlace(reason);
    // Settled first, so the source sees a tombstone when it drops the job.
    if (state !== State.Running) this.home.remove(this, state === State.Delayed);
    this.home.host.jobCancelled(this);
    return true;
  }

  /**
   * Settles the job `'cancelled'` and aborts its signal if it runs. Leaves the source alone:
   * callers that hold the job in a source remove it themselves.
   */
  cancelInPlace(reason?: unknown): void {
    const error = new CancelledError(reason);
    if (this.state === State.Running) {
      this.#abortReason = error;
      this.#controller?.abort(error);
    }
    this.settle(State.Cancelled, error);
  }

  /** Cancel this job when `signal` aborts; the listener is removed once the job settles. */
  followSignal(signal: AbortSignal): void {
    this.#externalSignal = signal;
    this.#onExternalAbort = () => this.cancel(signal.reason);
    signal.addEventListener('abort', this.#onExternalAbort, { once: true });
  }

  /**
   * Records the final outcome and settles the promises, if anybody asked for them.
   * `value` is the result for `Succeeded`, the error otherwise.
   */
  settle(state: State.Succeeded | State.Failed | State.Cancelled, value: unknown): void {
    this.state = state;
    this.#value = value;
    if (this.#externalSignal !== undefined) {
      this.#externalSignal.removeEventListener('abort', this.#onExternalAbort as () => void);
      this.#externalSignal = undefined;
      this.#onExternalAbort = undefined;
    }
    const outcome = this.#outcome;
    if (outcome === undefined) return;
    if (state === State.Succeeded) outcome.resolve(value as R);
    else outcome.reject(value);
  }

  #outcomeFor(): Outcome<R> {
    if (this.#outcome !== undefined) return this.#outcome;
    let outcome: Outcome<R>;
    if (this.state === State.Succeeded) {
      outcome = { promise: Promise.resolve(this.#value as R), resolve: noop, reject: noop, settledPromise: undefined };
    } else if (this.state >= State.Failed) {
      const promise = Promise.reject(this.#value);
      outcome = { promise, resolve: noop, reject: noop, settledPromise: undefined };
    } else {
      let resolve!: (value: R) => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<R>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      outcome = { promise, resolve, reject, settledPromise: undefined };
    }
    this.#outcome = outcome;
    return outcome;
  }
}
