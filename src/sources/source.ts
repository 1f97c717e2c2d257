import type { BindOptions, PurgeOptions } from '../api/bind-options.js';
import { parseAddOptions, type AddOptions, type ParsedAddOptions } from './add-options.js';
import type { Clock } from '../shell/clock.js';
import type { Core } from '../core/core.js';
import type { KeyedJobs } from '../core/keys/keyed-jobs.js';
import { Lane } from '../core/lane.js';
import { QueueClosedError, QueueFullError } from '../api/errors.js';
import type { DueJobs } from '../core/due/due-jobs.js';
import { jobWithId } from '../core/job-ids.js';
import * as check from '../internal/validate.js';
import { HandleGroup, withoutLiveSignal } from '../handles/job-group.js';
import type { JobGroup, JobProgress, JobRecord } from '../handles/job.js';
import { checkKeysOptions, checkWeight, type KeysOptions, type KeyStats } from './keys.js';
import { keyName } from '../core/keys/key-name.js';
import { SourceTimings } from '../observe/timings.js';
import { checkTaskData } from '../shell/worker-options.js';

export type { AddOptions } from './add-options.js';

/**
 * Options for `bindQueue` and `bindPriorityQueue`: {@link BindOptions} and `keys`.
 *
 * @typeParam T - job data
 * @example
 * ```ts
 * worker.bindQueue({ name: 'exports', keys: { by: (data) => data.tenant, concurrency: 2 } });
 * ```
 */
export interface QueueBindOptions<T = unknown> extends BindOptions {
  /** Split the queue's jobs by key and take turns between keys, with caps per key (see {@link KeysOptions}). */
  keys?: KeysOptions<T>;
}

/**
 * What a source needs from the worker that owns it: the shell, through which every change of
 * a job goes (it asks the core, then acts on what the core decided).
 *
 * @internal
 */
export interface SourceHost {
  /** The worker's monotonic clock. */
  readonly clock: Clock;
  /** Whether jobs run in worker threads (the `transfer` add option needs it). */
  readonly threads: boolean;
  /** Whether it is a function worker: every job's data must be a function. */
  readonly functions: boolean;
  /** Adds one job; the caller has checked its options, key and room. */
  add<T, R>(source: Source<T, R>, data: T, priority: number, parsed: ParsedAddOptions | undefined, key: string | undefined): JobRecord<T, R>;
  /** Cancels a job (its handle's `cancel`); false if it had already settled. */
  cancel(job: JobRecord, reason: unknown): boolean;
  /** Removes every waiting job of `source`, or of one of its keys. */
  purge(source: Source, key?: string): number;
  /** Something may start now that could not before (a key was resumed): run a decision pass. */
  wake(): void;
  /** A handler reported progress for `job` (`job.updateProgress`). */
  progress(job: JobRecord, value: JobProgress): void;
  /** The source takes no more jobs and leaves the list once drained (an unsubscribed subscription). */
  retire(source: Source): void;
}

const BIND_OPTIONS = new Set(['priority', 'weight', 'name', 'capacity', 'concurrency', 'rateLimit']);
const QUEUE_BIND_OPTIONS = new Set([...BIND_OPTIONS, 'keys']);
const RATE_LIMIT_FIELDS = ['limit', 'interval'] as const;

/** Validates bind options; shared by every kind of source (`keys` only where `withKeys`). @internal */
export function checkBindOptions(call: string, options: QueueBindOptions<never> | undefined, withKeys = false): void {
  check.optionsObject(`${call} options`, options);
  if (options === undefined) return;
  const allowed = withKeys ? QUEUE_BIND_OPTIONS : BIND_OPTIONS;
  for (const key of Object.keys(options)) {
    if (!allowed.has(key)) {
      throw new TypeError(`qmux: unknown option "${key}" in ${call}; allowed: ${[...allowed].join(', ')}`);
    }
  }
  if (options.keys !== undefined) checkKeysOptions(options.keys);
  if (options.priority !== undefined) check.finiteNumber('bind option "priority"', options.priority);
  if (options.weight !== undefined) check.positiveInt('bind option "weight"', options.weight);
  if (options.name !== undefined) check.nonEmptyString('bind option "name"', options.name);
  if (options.capacity !== undefined) check.positiveIntOrInfinity('bind option "capacity"', options.capacity);
  if (options.concurrency !== undefined) check.positiveIntOrInfinity('bind option "concurrency"', options.concurrency);
  if (options.rateLimit !== undefined) {
    const rate = options.rateLimit;
    check.optionsObject('bind option "rateLimit"', rate);
    if (rate === null || typeof rate !== 'object') throw new TypeError('qmux: bind option "rateLimit" must be an object { limit, interval }');
    check.knownFields('bind option "rateLimit"', rate, RATE_LIMIT_FIELDS);
    check.positiveInt('bind option "rateLimit.limit"', rate.limit);
    check.finiteNumber('bind option "rateLimit.interval"', rate.interval);
    if (rate.interval <= 0) throw new RangeError(`qmux: bind option "rateLimit.interval" must be > 0 ms, got ${rate.interval}`);
  }
}

/**
 * What a worker makes a local source of: the arguments of {@link Source}'s constructor, which
 * each kind's `make` passes on (their constructors are private, so `new Queue()` does not compile).
 *
 * @internal
 */
export type SourceParts = ConstructorParameters<typeof Source>;

interface SizeWaiter {
  below: number;
  resolve(): void;
}

/**
 * What queues, priority queues and subscriptions share: the waiting jobs (due and delayed), the
 * source's own limits, and its place in the list. Only the worker's dispatcher takes jobs out.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 */
export abstract class Source<T = unknown, R = unknown> extends Lane {
  /** @internal */ readonly host: SourceHost;
  /** @internal */ readonly core: Core;
  /** @internal `keys.by` and `keys.weight`: user code, called by the shell before a job is added. */
  readonly keyBy: ((data: never) => unknown) | undefined;
  /** @internal */
  readonly keyWeight: ((key: string) => unknown) | undefined;
  /** @internal Its sampled jobs' wait and run times (see `Metrics`), made with the first one. */
  timings: SourceTimings | undefined = undefined;
  /** Most jobs that may wait in it. */
  readonly capacity: number;

  #closed = false;
  /** @internal Producers waiting in `onSizeLessThan`. */
  sizeWaiters: SizeWaiter[] | undefined = undefined;

  /** @internal */
  constructor(host: SourceHost, core: Core, due: DueJobs, name: string, bindOrder: number, options: BindOptions | undefined) {
    // Plain JavaScript can still call `new` (the types refuse it): say what to do instead.
    if (host == null || core == null) {
      throw new TypeError(
        `qmux: a ${new.target.name} is made by a worker (worker.bindQueue(), bindPriorityQueue(), subscribe(topic) or bindRemote(adapter)), not with new`,
      );
    }
    super(due, name, bindOrder, options);
    this.host = host;
    this.core = core;
    const keyOptions = (options as QueueBindOptions<never> | undefined)?.keys;
    this.keyBy = keyOptions?.by;
    this.keyWeight = keyOptions?.weight;
    this.capacity = options?.capacity ?? Infinity;
  }

  /** Whether it was closed (it takes no new jobs). */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Stops taking new jobs: `add` throws `QueueClosedError`, `tryAdd` returns `undefined`. Jobs
   * already waiting still run. There is no reopening.
   */
  close(): void {
    this.#closed = true;
  }

  /**
   * Removes every waiting job (due or delayed). Their handles settle `'cancelled'` and reject
   * with `CancelledError`. Running jobs are not touched.
   *
   * @returns how many jobs were removed
   */
  purge(): number {
    return this.host.purge(this as Source);
  }

  /**
   * Resolves once fewer than `n` jobs wait in it: a producer's back-pressure.
   *
   * @example
   * ```ts
   * for (const line of lines) {
   *   await queue.onSizeLessThan(1000);
   *   queue.add(line);
   * }
   * ```
   */
  onSizeLessThan(n: number): Promise<void> {
    check.positiveInt('onSizeLessThan(n)', n);
    if (this.length < n) return Promise.resolve();
    const waiters = (this.sizeWaiters ??= []);
    if (waiters.length === 0) this.core.watchSize(this as Source, true);
    return new Promise<void>((resolve) => waiters.push({ below: n, resolve }));
  }

  /**
   * @internal Whether `add` would accept `count` more jobs now (of key `key`, in a keyed queue;
   * `aborted`: added with a signal that has aborted already); throws or returns the error.
   */
  refusal(count: number, key?: string, aborted = false): QueueClosedError | QueueFullError | undefined {
    if (this.#closed || this.retiring) return new QueueClosedError(this.name);
    // A batch of none always fits, even a source that a retry took past its capacity; so do jobs
    // whose signal has already aborted, which settle cancelled without ever joining.
    if (aborted) return undefined;
    if (count > 0 && this.capacity !== Infinity && this.length + count > this.capacity) {
      return new QueueFullError(this.name, this.capacity, count, Math.max(0, this.capacity - this.length));
    }
    if (key !== undefined && count > 0 && (this.keys as KeyedJobs).limits.capacity !== Infinity) {
      const capacity = (this.keys as KeyedJobs).limits.capacity;
      const waiting = (this.keys as KeyedJobs).waitingOf(key) + this.parkedOfKey(key);
      if (waiting + count > capacity) return new QueueFullError(this.name, capacity, count, Math.max(0, capacity - waiting), key);
    }
    return undefined;
  }

  /**
   * @internal The checked key of a job about to be added: the `key` option, else `keys.by(data)`
   * (which may throw: the add then throws its error); `undefined` for a source without keys.
   */
  keyFor(data: T, parsed: ParsedAddOptions | undefined): string | undefined {
    const given = parsed?.key;
    if (this.keys === undefined) {
      if (given !== undefined) {
        throw new TypeError(`qmux: add option "key" is for queues bound with the "keys" option; source "${this.name}" has none`);
      }
      return undefined;
    }
    const keys = this.keys as KeyedJobs;
    if (given !== undefined) return keys.nameOf('add option "key"', given);
    const by = this.keyBy;
    if (by === undefined) {
      throw new TypeError(`qmux: a job of keyed source "${this.name}" needs a key: give the add option "key", or bind it with "keys.by"`);
    }
    return keys.nameOf('the "key" that keys.by(data) returned', (by as (data: T) => unknown)(data));
  }

  /**
   * @internal Asks `keys.weight` for every key in `names` that is not active yet (user code, before
   * the transition; a bad answer throws and nothing is added), for the core to use as they
   * become active. {@link keysAdded} lets go of the answers.
   */
  weighKeys(names: Iterable<string>): void {
    const weigh = this.keyWeight;
    const keys = this.keys;
    if (weigh === undefined || keys === undefined) return;
    let weights: Map<string, number> | undefined;
    for (const name of names) {
      if (keys.has(name) || weights?.has(name) === true) continue;
      (weights ??= new Map()).set(name, checkWeight(name, weigh(name)));
    }
    keys.pendingWeights = weights;
  }

  /**
   * @internal Before an add or a pause of a keyed queue with per-key rate limits: the core forgets
   * a key whose last start has left its window only at its next decision, so the time is brought
   * to now first. Such a key is then new to the call that comes: it joins the end of the turn
   * order and its weight is asked again (SPEC 10).
   */
  keysToNow(): void {
    if (this.keys?.timed === true && this.core.advanceKeys(this as Source, this.host.clock.now())) this.host.wake();
  }

  /** @internal The add that {@link weighKeys} prepared is over. */
  keysAdded(): void {
    if (this.keys !== undefined) this.keys.pendingWeights = undefined;
  }

  /** @internal The checked key of a key-taking call (`pauseKey`, `keyStats`...) of a keyed queue. */
  keyArgument(call: string, key: unknown): string {
    if (this.keys === undefined) throw new TypeError(`qmux: ${call} is for queues bound with the "keys" option; source "${this.name}" has none`);
    return keyName(`${call} "key"`, key);
  }

  /** @internal `pauseKey`: holds back the key's jobs (remembered even with none). */
  pauseKeyed(key: unknown): void {
    const name = this.keyArgument('pauseKey(key)', key);
    const keys = this.keys as KeyedJobs;
    this.keysToNow();
    let weight = 1;
    if (!keys.has(name) && this.keyWeight !== undefined) weight = checkWeight(name, this.keyWeight(name));
    this.core.pauseKey(this as Source, name, weight);
  }

  /** @internal `resumeKey`. */
  resumeKeyed(key: unknown): void {
    const name = this.keyArgument('resumeKey(key)', key);
    if (this.core.resumeKey(this as Source, name)) this.host.wake();
  }

  /** @internal `keyStats`. */
  keyStatsOf(key: unknown): KeyStats {
    const name = this.keyArgument('keyStats(key)', key);
    const stats = (this.keys as KeyedJobs).stats(name, this.host.clock.now());
    const parked = this.parkedOfKey(name);
    if (parked > 0) {
      stats.waiting += parked;
      stats.due += parked;
    }
    return stats;
  }

  /** @internal `purge(options)` of a queue. */
  purgeWith(options: PurgeOptions | undefined): number {
    if (options === undefined) return this.host.purge(this as Source);
    check.optionsObject('purge options', options);
    check.knownFields('purge options', options, ['key']);
    if (options.key === undefined) return this.host.purge(this as Source);
    return this.host.purge(this as Source, this.keyArgument('purge({ key })', options.key));
  }

  /**
   * @internal Refuses data its worker cannot run: a function worker's job data must be a
   * function. Checked before room, as options are.
   */
  checkData(data: T): void {
    if (this.host.functions) checkTaskData(data);
  }

  /**
   * @internal Checks add options for this source's worker. Callers check them before checking
   * room, so a bad option throws even on a full or closed source (where `tryAdd` would otherwise
   * hide it).
   */
  parseOptions(options: AddOptions | undefined): ParsedAddOptions | undefined {
    return options === undefined ? undefined : parseAddOptions(options, this.host.threads);
  }

  /**
   * @internal The job an add with these options returns instead of adding one: the job whose id
   * is in use in this source, whatever its status, and even when the source is full or closed
   * (counted as de-duplicated). `undefined` for an add without an id, which costs no lookup.
   */
  existing(parsed: ParsedAddOptions | undefined): JobRecord<T, R> | undefined {
    const id = parsed?.id;
    if (id === undefined) return undefined;
    const job = jobWithId(this as Source, id);
    if (job !== undefined) this.core.deduplicate(this as Source);
    return job as JobRecord<T, R> | undefined;
  }

  /**
   * @internal Told of every progress report recorded for one of its jobs, after the `progress`
   * event: the one place where a source that lives elsewhere (a remote source, SPEC 9) forwards
   * it (to its adapter's `progress(job, value)`). An in-memory source has nothing to do.
   */
  progressed(_job: JobRecord<T, R>, _value: JobProgress): void {}

  /**
   * @internal Adds one job; the caller has checked its options, key and room. `priority` is 0
   * outside priority queues.
   */
  enqueue(data: T, priority: number, parsed: ParsedAddOptions | undefined, key?: string): JobRecord<T, R> {
    // An active key has its weight: only the add that makes a key active asks for one.
    if (key === undefined) return this.host.add(this, data, priority, parsed, key);
    this.keysToNow();
    if (this.keyWeight === undefined || (this.keys as KeyedJobs).has(key)) return this.host.add(this, data, priority, parsed, key);
    this.weighKeys([key]);
    try {
      return this.host.add(this, data, priority, parsed, key);
    } finally {
      this.keysAdded();
    }
  }

  /** @internal Adds many jobs all or nothing. */
  enqueueAll(items: readonly { data: T; priority: number }[], options: AddOptions | undefined): JobGroup<R> {
    const parsed = this.parseOptions(options);
    if (parsed?.id !== undefined) {
      throw new TypeError('qmux: addAll() takes no "id" option: one id cannot name many jobs; add each with add(data, { id })');
    }
    if (parsed?.transfer !== undefined) {
      // One list for every job of the tick: the first job's thread would take the buffers and
      // the others would get them empty.
      throw new TypeError(
        'qmux: addAll() takes no "transfer" option: a buffer moves into one thread only; add each job with add(data, { transfer })',
      );
    }
    if (this.host.functions) for (const item of items) checkTaskData(item.data);
    // The `key` option is checked by each item's keyFor: an empty batch checks it here.
    if (items.length === 0 && parsed?.key !== undefined) this.keyFor(undefined as T, parsed);
    const names = this.keys === undefined && parsed?.key === undefined ? undefined : items.map((item) => this.keyFor(item.data, parsed) as string);
    const aborted = parsed?.signal?.aborted === true;
    const refused = this.refusal(items.length, undefined, aborted);
    if (refused !== undefined) throw refused;
    if (names !== undefined) {
      this.keysToNow();
      const counts = new Map<string, number>();
      for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
      for (const [name, count] of counts) {
        const full = this.refusal(count, name, aborted);
        if (full !== undefined) throw full;
      }
      this.weighKeys(counts.keys());
    }
    const each = withoutLiveSignal(parsed); // the group follows the signal, with one listener
    try {
      return new HandleGroup(
        items.map((item, i) => this.host.add(this, item.data, item.priority, each, names?.[i])),
        parsed?.signal,
      );
    } finally {
      this.keysAdded();
    }
  }

  /** @internal Its timings, made on first use. */
  sampledTimings(): SourceTimings {
    this.timings ??= new SourceTimings();
    return this.timings;
  }

  /** @internal Resolves the `onSizeLessThan` waiters that now have room. */
  lengthDropped(): void {
    const waiters = this.sizeWaiters;
    if (waiters === undefined) return;
    const length = this.length;
    const still = waiters.filter((waiter) => {
      if (length < waiter.below) waiter.resolve();
      return length >= waiter.below;
    });
    this.sizeWaiters = still.length > 0 ? still : undefined;
    if (still.length === 0) this.core.watchSize(this as Source, false);
  }
}
