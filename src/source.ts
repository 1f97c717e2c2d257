import { parseAddOptions, type AddOptions, type ParsedAddOptions } from './add-options.js';
import type { Clock } from './clock.js';
import type { Core } from './core/core.js';
import { KeyedJobs } from './core/keys/keyed-jobs.js';
import { QueueClosedError, QueueFullError } from './errors.js';
import { DelayedJobs, type DueJobs } from './internal/due-jobs.js';
import { jobWithId } from './job-ids.js';
import { RateWindow } from './internal/rate-window.js';
import { SampledAdds } from './internal/sampled-adds.js';
import * as check from './internal/validate.js';
import { JobBatch, withoutLiveSignal } from './job-group.js';
import { type JobGroup, type JobProgress, type JobRecord, State, UNTIMED } from './job.js';
import { checkKeysOptions, checkWeight, keyName, type KeysOptions, type KeyStats } from './keys.js';
import { AddBatches } from './internal/add-batches.js';
import { isTimed, SourceTimings, type WorkerCounters, zeroCounters } from './stats.js';
import type { SourceView } from './strategies/strategy.js';
import { checkTaskData } from './worker-options.js';

export type { AddOptions } from './add-options.js';

/**
 * Options for `bindQueue`, `bindPriorityQueue` and `subscribe`. All are optional.
 *
 * @example
 * ```ts
 * worker.bindQueue({ name: 'emails', priority: 2, weight: 3, capacity: 10_000,
 *                    concurrency: 4, rateLimit: { limit: 10, interval: 1000 } });
 * ```
 */
export interface BindOptions {
  /** Rank in the list: a finite number, lower goes first. Without one the source ranks after every ranked source. */
  priority?: number;
  /** Share under `Strategy.Weighted`: an integer >= 1. Default 1. */
  weight?: number;
  /** Unique within the worker. Default: generated (`queue-1`, `priority-queue-2`, `subscription-3`...). */
  name?: string;
  /** Most jobs that may wait in it (due or delayed); `add` beyond that throws `QueueFullError`. Default unlimited. */
  capacity?: number;
  /** Most of its jobs running at once (a positive integer or Infinity). Default unlimited (the worker's concurrency still applies). */
  concurrency?: number;
  /** At most `limit` of its jobs start in any window of `interval` ms. */
  rateLimit?: RateLimit;
}

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

/** What `purge` of a queue takes. */
export interface PurgeOptions {
  /** Remove only the waiting jobs of this key (a keyed queue). */
  key?: string | number;
}

/** A sliding-window rate limit: at most `limit` starts in any `interval` ms. */
export interface RateLimit {
  /** Starts allowed per window: an integer >= 1. */
  limit: number;
  /** Window length in ms: a finite number > 0. */
  interval: number;
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

/** The live view a strategy reads. @internal */
class View implements SourceView {
  readonly source: Source;
  constructor(source: Source) {
    this.source = source;
  }
  get name(): string {
    return this.source.name;
  }
  get index(): number {
    return this.source.index;
  }
  get priority(): number | undefined {
    return this.source.priority;
  }
  get weight(): number {
    return this.source.weight;
  }
  get length(): number {
    return this.source.viewLength();
  }
  get running(): number {
    return this.source.running;
  }
  get eligible(): boolean {
    return this.source.isEligible(this.source.core.dispatcher.now);
  }
}

/** @internal Recovers the source behind a view, or `undefined` if it is not one of ours. */
export function sourceOfView(view: unknown): Source | undefined {
  return view instanceof View ? view.source : undefined;
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
export abstract class Source<T = unknown, R = unknown> {
  /** @internal */ readonly host: SourceHost;
  /** @internal */ readonly core: Core;
  /** @internal */ readonly due: DueJobs;
  /** @internal */ readonly delayed: DelayedJobs;
  /** @internal The per-key machinery of a queue bound with `keys` (then also `due` and `delayed`). */
  readonly keys: KeyedJobs | undefined;
  /** @internal `keys.by` and `keys.weight`: user code, called by the shell before a job is added. */
  readonly keyBy: ((data: never) => unknown) | undefined;
  /** @internal */
  readonly keyWeight: ((key: string) => unknown) | undefined;
  /** @internal */ readonly view: SourceView;
  /** @internal */ readonly rate: RateWindow | undefined;
  /** @internal Most of its jobs running at once. */
  readonly maxRunning: number;
  /** @internal Position in the list; kept current by the dispatcher. */
  index = -1;
  /** @internal Whether it is in the dispatcher's eligible set (kept by `Dispatcher.touch`). */
  inEligible = false;
  /** @internal The rate-window opening time it waits for in the dispatcher's heap, or NaN. */
  rateHeldAt = Number.NaN;
  /** @internal A small number of its own while bound (reused after it leaves), for pickers' typed arrays. */
  slot = -1;
  /** @internal Bind order within the worker: the tie-break among equal priorities. */
  readonly bindOrder: number;
  /** @internal Jobs of this source in flight. */
  running = 0;
  /** @internal Live waiting jobs whose `dueAt` is a real time (ordering needs the clock while any exist). */
  timed = 0;
  /** @internal Set once the source takes no more jobs and should leave the list when drained. */
  retiring = false;
  /** @internal Counters of its jobs since it was bound; the core writes them with the worker's. */
  readonly counters: WorkerCounters = zeroCounters();
  /** @internal Its sampled jobs' wait and run times (see `Metrics`), made with the first one. */
  timings: SourceTimings | undefined = undefined;
  /** @internal Whether its jobs belong to a remote engine, which owns their retries (SPEC 9). */
  readonly isRemote: boolean = false;
  /** @internal Set while its engine cannot be reached (a remote source): it is then not eligible. */
  unreachable = false;

  /** The source's name, unique within its worker. */
  readonly name: string;
  /** Its priority number in the list, or `undefined`. */
  readonly priority: number | undefined;
  /** Its weight under `Strategy.Weighted`. */
  readonly weight: number;
  /** Most jobs that may wait in it. */
  readonly capacity: number;

  #closed = false;
  /** The add times of its sampled jobs that wait here (see `isSampled` in `stats.ts`), off the job records. */
  #sampled: SampledAdds | undefined = undefined;
  /** @internal The job that joined the source when it was empty, until it leaves (its add time stays). */
  firstIntoEmpty: JobRecord | undefined = undefined;
  /** @internal The batch of adds (see `Worker`) whose first job here was last noted ({@link noteBatch}). */
  batchNoted = 0;
  /** @internal Whether it times its adds by batch: a FIFO source, whose next job is its oldest (see {@link noteBatch}). */
  readonly notesBatches: boolean;
  /** A FIFO source's add times by batch: its oldest due job's age (see {@link oldestDueAgeMs}). */
  #batches: AddBatches | undefined = undefined;
  #firstIntoEmptyAt = 0;
  /** @internal Redriven jobs waiting for their predecessor's handler to settle (see `Core.hold`). */
  held: Set<JobRecord> | undefined = undefined;
  /** @internal Producers waiting in `onSizeLessThan`. */
  sizeWaiters: SizeWaiter[] | undefined = undefined;
  /** @internal The jobs in use that have a user id, by id; made on the first one (see `job-ids.ts`). */
  ids: Map<string, JobRecord> | undefined = undefined;

  /** @internal */
  constructor(host: SourceHost, core: Core, due: DueJobs, name: string, bindOrder: number, options: BindOptions | undefined) {
    // Plain JavaScript can still call `new` (the types refuse it): say what to do instead.
    if (host == null || core == null) {
      throw new TypeError(
        `qmux: a ${new.target.name} is made by a worker (worker.bindQueue(), bindPriorityQueue(), subscribe(topic) or bindRemote(adapter)), not with new`,
      );
    }
    this.host = host;
    this.core = core;
    this.due = due;
    this.keys = due instanceof KeyedJobs ? due : undefined;
    this.delayed = this.keys === undefined ? new DelayedJobs() : this.keys.delayed;
    const keyOptions = (options as QueueBindOptions<never> | undefined)?.keys;
    this.keyBy = keyOptions?.by;
    this.keyWeight = keyOptions?.weight;
    this.name = name;
    this.bindOrder = bindOrder;
    this.priority = options?.priority;
    this.weight = options?.weight ?? 1;
    this.capacity = options?.capacity ?? Infinity;
    this.maxRunning = options?.concurrency ?? Infinity;
    this.rate = options?.rateLimit === undefined ? undefined : new RateWindow(options.rateLimit.limit, options.rateLimit.interval);
    this.view = new View(this as Source);
    this.notesBatches = !due.needsEveryDue && this.keys === undefined;
  }

  /** Jobs waiting in it, due or delayed. */
  get length(): number {
    return this.due.length + this.delayed.length + (this.held === undefined ? 0 : this.held.size);
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
    return new Promise<void>((resolve) => (this.sizeWaiters ??= []).push({ below: n, resolve }));
  }

  /**
   * @internal The length a strategy reads (`SourceView.length`): its due jobs, those of paused
   * keys left out.
   */
  viewLength(): number {
    const delayed = this.delayed;
    if (delayed.horizon !== -Infinity) {
      // Due jobs still held with the delayed ones (a promotion in progress) count. A FIFO or
      // priority queue's are counted where they wait when that takes O(1) (a burst coming due at
      // once: a strategy reading lengths must not move a million jobs); otherwise they move now.
      // (A keyed queue's length leaves out paused keys, so it needs them moved.)
      if (this.keys === undefined) {
        const held = delayed.quickCountDueBy(delayed.horizon);
        if (held >= 0) return this.due.length + held;
      }
      this.core.catchUp(this as Source);
    }
    return this.keys === undefined ? this.due.length : this.keys.unpausedDue;
  }

  /** @internal Whether this source may give a job at `now`. */
  isEligible(now: number): boolean {
    return (
      this.due.length > 0 &&
      this.running < this.maxRunning &&
      (this.rate === undefined || this.rate.allows(now)) &&
      (this.keys === undefined || this.keys.hasReady)
    );
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
      const waiting = (this.keys as KeyedJobs).waitingOf(key) + this.#heldOfKey(key);
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
    const held = this.#heldOfKey(name);
    if (held > 0) {
      stats.waiting += held;
      stats.due += held;
    }
    return stats;
  }

  /**
   * Redrives of key `name` held behind their predecessor's running handler (see `Core.hold`):
   * they wait, due, in {@link held} rather than in the key's own jobs until that handler returns.
   * O(held redrives of this source), none at all in the common case.
   */
  #heldOfKey(name: string): number {
    const held = this.held;
    if (held === undefined || held.size === 0) return 0;
    let count = 0;
    for (const job of held) if (job.key === name) count++;
    return count;
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
      // One list for every job of the batch: the first job's thread would take the buffers and
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
      return new JobBatch(
        items.map((item, i) => this.host.add(this, item.data, item.priority, each, names?.[i])),
        parsed?.signal,
      );
    } finally {
      this.keysAdded();
    }
  }

  /**
   * @internal A job joined this source when it was empty, at `now` on the worker's clock: its add
   * time is kept while it waits, so a stuck source always shows its oldest job's age.
   */
  noteFirst(job: JobRecord, now: number): void {
    this.firstIntoEmpty = job;
    this.#firstIntoEmptyAt = now;
  }

  /**
   * @internal `job`, due on add at `now`, is the first this FIFO source got in batch `batch` of
   * the worker's adds (the adds of one synchronous run). It keeps its add times by batch, which
   * gives the age of its oldest due job to the batch whatever the sampling. Only FIFO sources
   * ({@link notesBatches}): another source's next job is not its oldest.
   */
  noteBatch(job: JobRecord, now: number, batch: number): void {
    this.batchNoted = batch;
    const oldest = this.due.peek();
    (this.#batches ??= new AddBatches()).note(job.seq, now, oldest === undefined ? job.seq : oldest.seq);
  }

  /** @internal A sampled job (see `isSampled`) joined this source at `now`: keeps its add time while it waits. */
  noteSampled(job: JobRecord, now: number): void {
    (this.#sampled ??= new SampledAdds()).add(job, now);
  }

  /** @internal The add time of a sampled job that is leaving (starting), or `undefined` if none is kept; forgets it. */
  takeSampled(job: JobRecord): number | undefined {
    const sampled = this.#sampled;
    if (sampled === undefined) return undefined;
    const addedAt = sampled.take(job);
    if (sampled.empty) this.#sampled = undefined;
    return addedAt;
  }

  /**
   * @internal How long the oldest due job has waited, ms (a held redrive is due since its
   * redrive). In a FIFO source (a queue, a subscription, a remote source) that is its next job,
   * timed from its due time or from the start of its batch of adds (one synchronous run), so
   * exact to that batch. Elsewhere, as far as the timed jobs tell: the sampled ones, the first
   * added to an empty source, and the next job if it carries a due time; failing those, the time
   * since the source last left empty, an upper bound.
   */
  oldestDueAgeMs(now: number): number | null {
    const held = this.held;
    if (held !== undefined && held.size > 0) {
      // A redrive held behind its predecessor's handler is due since its redrive.
      let since = Infinity;
      for (const job of held) since = Math.min(since, job.ext?.heldSince ?? now);
      const rest = this.due.length === 0 ? null : this.#oldestInDue(now);
      return Math.max(rest ?? 0, Math.round((now - since) * 1000) / 1000);
    }
    return this.due.length === 0 ? null : this.#oldestInDue(now);
  }

  #oldestInDue(now: number): number {
    // A FIFO source's next job is its oldest due one: due since its due time, or since its batch
    // of adds began. (A due job still held with the delayed ones may be older.)
    const batches = this.#batches;
    if (batches !== undefined) {
      const next = this.due.peek() as JobRecord;
      const since = next.dueAt !== UNTIMED ? next.dueAt : batches.addedBy(next.seq);
      if (since !== undefined) {
        let age = now - since;
        if (this.delayed.length > 0 && this.delayed.nextDueAt() <= now) age = Math.max(age, now - this.delayed.nextDueAt());
        return Math.round(age * 1000) / 1000;
      }
    }
    let age = -1;
    const ageOf = (job: JobRecord, addedAt: number): number => (job.dueAt !== UNTIMED ? now - job.dueAt : now - addedAt);
    const first = this.firstIntoEmpty;
    if (first !== undefined && first.state === State.Waiting) age = ageOf(first, this.#firstIntoEmptyAt);
    // The sampled job still waiting here that has been due longest.
    if (this.#sampled !== undefined) age = Math.max(age, this.#sampled.oldestDueAge(now));
    // Neither applies: every waiting job came after the source last left empty, an upper bound
    // (the next job's own age would be a lower one, and may be far off: a young job of a better
    // priority is next, or the first job in was a delayed one that older due ones wait behind).
    if (age < 0) return Math.round((now - this.#firstIntoEmptyAt) * 1000) / 1000;
    const next = this.due.peek();
    if (next !== undefined && next.dueAt !== UNTIMED) age = Math.max(age, now - next.dueAt);
    return Math.round(age * 1000) / 1000;
  }

  /**
   * @internal A job left without starting (cancelled): drops what the stats keep of it (its
   * sampled add time, and the first-into-empty reference, so its data can be freed).
   */
  forget(job: JobRecord): void {
    if (job === this.firstIntoEmpty) this.firstIntoEmpty = undefined;
    const sampled = this.#sampled;
    if (sampled !== undefined && isTimed(job)) {
      sampled.take(job);
      if (sampled.empty) this.#sampled = undefined;
    }
  }

  /** @internal Lets go of every waiting job the stats point at (a purge). */
  forgetWaiting(): void {
    this.#sampled = undefined;
    this.#batches?.clear();
    this.firstIntoEmpty = undefined;
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
  }
}
