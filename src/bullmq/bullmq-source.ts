import type { Job as BullJob, RedisClient as BullClient, Worker as BullWorker, WorkerOptions as BullWorkerOptions } from 'bullmq';
import * as check from '../internal/validate.js';
import type { RemoteAdapter, RemoteJob } from '../remote/adapter.js';
import { LockLostError } from '../remote/errors.js';
import { messageOf, safeString } from '../api/describe.js';

// bullmq and ioredis are optional peer dependencies: loaded here, when `qmux/bullmq` is
// imported, and never by `import 'qmux'`.
let bullmq: typeof import('bullmq');
try {
  bullmq = await import('bullmq');
  await import('ioredis');
} catch (cause) {
  throw new Error('qmux/bullmq needs the packages "bullmq" and "ioredis", which are not installed: npm install bullmq ioredis', { cause });
}

/**
 * Options of a {@link BullMQSource}: BullMQ's worker options, passed through (`connection`,
 * `prefix`, `lockDuration`, `stalledInterval`, `maxStalledCount`, `drainDelay`...). qmux runs
 * the jobs, so the options of BullMQ's own processing loop (`concurrency`, `autorun`, a
 * processor, `limiter`) do not apply: use the bind options of `worker.bindRemote`.
 */
export type BullMQSourceOptions = Omit<BullWorkerOptions, 'autorun' | 'concurrency' | 'limiter' | 'useWorkerThreads'>;

/** BullMQ's codes for "this job is not yours (any more)": missing job, missing lock, not active, lock mismatch. */
const LOCK_CODES = new Set([-1, -2, -3, -6]);

/**
 * BullMQ's codes for a flow parent that cannot complete: a child failed (-9, an
 * `UnrecoverableError`) or is not done (-4). Its attempt fails instead, as under BullMQ's own
 * Worker; read as an outage, it was retried for good and held the job active.
 */
const CHILDREN_CODES = new Set([-4, -9]);

/**
 * The jobs claimed whose stored data could not be read (not JSON: written by something other
 * than BullMQ's `Queue.add`), with the reason they fail for. Such a job is fetched like any
 * other (moved to active, locked by its token) and then fails on its own, unrun.
 */
const unreadableJobs = new WeakMap<BullJob, string>();

/**
 * Makes `worker` build a job it cannot read (BullMQ's `createJob` throws: its data is not JSON)
 * as a job with no data, noted in {@link unreadableJobs}, instead of throwing. Thrown, the error
 * failed the whole claim it came in, and the good jobs fetched with it stayed locked under tokens
 * no one renewed. A job that cannot be read with its data set aside either still throws.
 */
function readUnreadableJobs(worker: BullWorker): void {
  const target = worker as unknown as { createJob(json: { data?: string }, jobId: string): BullJob };
  const createJob = target.createJob.bind(worker);
  target.createJob = (json, jobId) => {
    try {
      return createJob(json, jobId);
    } catch (error) {
      let why = `job cannot be read: ${messageOf(error)}`;
      try {
        JSON.parse(json.data || '{}');
      } catch (parseError) {
        why = `job data is not valid JSON: ${messageOf(parseError)}`;
      }
      const job = createJob({ ...json, data: 'null' }, jobId);
      unreadableJobs.set(job, why);
      return job;
    }
  };
}

/**
 * Why BullMQ's own Worker would fail `job` without running it (its `getUnrecoverableErrorMessage`):
 * a deferred failure (a flow parent whose child failed with `failParentOnFailure`), or more starts
 * than the worker's `maxStartedAttempts`; else `undefined`.
 */
function unrunnable(job: BullJob, maxStartedAttempts: number | undefined): string | undefined {
  const unreadable = unreadableJobs.get(job);
  if (unreadable !== undefined) return unreadable;
  const deferred = (job as { deferredFailure?: string }).deferredFailure;
  if (deferred) return deferred;
  if (maxStartedAttempts && maxStartedAttempts < (job.attemptsStarted ?? 0)) return 'job started more than allowable limit';
  return undefined;
}

function asLockLost(error: unknown, job: BullRemoteJob, call: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' && LOCK_CODES.has(code) ? new LockLostError(job.id, call, { cause: error }) : error;
}

/**
 * The options BullMQ's Worker checks as it is made, checked here at once: that Worker is made on
 * the first claim, where its refusal would read as a Redis outage retried for ever. Also
 * `lockDuration`, which BullMQ does not check (a fraction or Infinity breaks its claim script
 * half-way, leaving the job active with no lock).
 */
function checkBullOptions(options: BullMQSourceOptions): void {
  const name = (option: string): string => `new BullMQSource() option "${option}"`;
  if (options.lockDuration !== undefined) check.positiveInt(name('lockDuration'), options.lockDuration);
  if (options.stalledInterval !== undefined) check.positiveInt(name('stalledInterval'), options.stalledInterval);
  if (options.drainDelay !== undefined) check.positiveFiniteNumber(name('drainDelay'), options.drainDelay);
  if (options.maxStalledCount !== undefined) check.nonNegativeInt(name('maxStalledCount'), options.maxStalledCount);
  if (options.maxStartedAttempts !== undefined) check.nonNegativeInt(name('maxStartedAttempts'), options.maxStartedAttempts);
  // An ioredis instance is used as it is: BullMQ refuses one that gives up on a blocked call
  // (its own test, copied: an instance has connect, disconnect and duplicate; a cluster's
  // options are its redisOptions; a maxRetriesPerRequest of 0 passes).
  const instance = options.connection as Record<string, unknown> & {
    isCluster?: boolean;
    options?: { maxRetriesPerRequest?: unknown; redisOptions?: { maxRetriesPerRequest?: unknown } };
  };
  if (['connect', 'disconnect', 'duplicate'].every((method) => typeof instance[method] === 'function')) {
    const retries = (instance.isCluster === true ? instance.options?.redisOptions : instance.options)?.maxRetriesPerRequest;
    if (retries) {
      throw new TypeError(
        `qmux: new BullMQSource() option "connection": an ioredis instance needs maxRetriesPerRequest: null (BullMQ blocks on it), got ${check.describeValue(retries)}; ` +
          'pass new IORedis({ ..., maxRetriesPerRequest: null }), or connection options',
      );
    }
  }
}

/**
 * Whether `moveError`, which `moveToFailed` threw, is BullMQ refusing to work out `job`'s retry
 * after `reason` (its `shouldRetryJob`, asked before anything is written, throws): a fault of the
 * job's options, not of Redis. Asked again, it must throw the same, with Redis answering (a
 * backoff strategy of the user's that reads Redis fails while Redis is down: that is an outage).
 */
async function retryRefused(job: BullJob, reason: Error, moveError: unknown): Promise<boolean> {
  const ask = (job as unknown as { shouldRetryJob?: (error: Error) => Promise<unknown> }).shouldRetryJob;
  if (typeof ask !== 'function') return false; // another BullMQ: the failure is taken as an outage, as before
  try {
    await ask.call(job, reason);
    return false;
  } catch (again) {
    if (messageOf(again) !== messageOf(moveError)) return false;
    const client = await settledWithin(backendOf(job).client, UNREACHABLE_CLOSE_MS);
    return (client as { status?: unknown } | undefined)?.status === 'ready';
  }
}

/** The backend a BullMQ job makes its calls through (the one its worker had when it got the job). */
function backendOf(job: BullJob): { client: Promise<BullClient> } {
  return (job as unknown as { backend: { client: Promise<BullClient> } }).backend;
}

/** One claimed BullMQ job: the job and the token that holds its lock. @internal */
class BullRemoteJob<T = unknown> implements RemoteJob<T> {
  readonly job: BullJob<T>;
  readonly token: string;
  constructor(job: BullJob<T>, token: string) {
    this.job = job;
    this.token = token;
  }
  get id(): string {
    return this.job.id as string;
  }
  get data(): T {
    return this.job.data;
  }
  get attempt(): number {
    return this.job.attemptsMade + 1;
  }
  get maxAttempts(): number {
    return this.job.opts.attempts ?? 1;
  }
  /**
   * BullMQ's own rule (`Job.shouldRetryJob`): attempts left, not an `UnrecoverableError`, and
   * under the queue's `maxStartedAttempts`. (A backoff function that returns -1 also fails the
   * job for good; that is known only once BullMQ has run it, so such a failure reads as retrying.)
   */
  retries(error: unknown): boolean {
    const job = this.job;
    // What `fail` sends: an Error as it is, anything else wrapped in a plain Error (which BullMQ retries).
    if (error instanceof Error && (error instanceof bullmq.UnrecoverableError || error.name === 'UnrecoverableError')) return false;
    const maxStarted = (job as unknown as { queue?: { opts?: { maxStartedAttempts?: number } } }).queue?.opts?.maxStartedAttempts;
    if (maxStarted !== undefined && maxStarted > 0 && maxStarted <= (job.attemptsStarted ?? 0)) return false;
    return job.attemptsMade + 1 < (job.opts.attempts ?? 1);
  }
}

const ABORTED = Symbol('aborted');

/** How long `close()` waits for a blocking fetch while Redis is unreachable. */
const UNREACHABLE_CLOSE_MS = 1000;

/** The blocking-connection calls of BullMQ's Redis backend (not in its public types). */
interface BlockingBackend {
  disconnectBlocking?(wait?: boolean): Promise<void>;
  reconnectBlocking?(): Promise<void>;
}

/** Whether `worker`'s connection to Redis is up (a connection never made resolves its client never: that is down too). */
async function reachable(worker: BullWorker): Promise<boolean> {
  return (await settledWithin(worker.getBackend().client, UNREACHABLE_CLOSE_MS))?.status === 'ready';
}

/**
 * Interrupts `worker`'s blocking fetch `pending` (its connection is dedicated to it) and hands
 * back to waiting the job it got meanwhile, if any. Only while Redis is up: interrupting waits for it.
 */
async function handBackBlocking(worker: BullWorker, pending: Promise<BullJob | undefined>): Promise<void> {
  await (worker.getBackend() as BlockingBackend).disconnectBlocking?.(false);
  const job = await pending.catch(() => undefined);
  if (job !== undefined) await handBack(job, job.token as string).catch(() => undefined);
}

/**
 * Takes back the start that BullMQ counted when it gave out `job` (its `attemptsStarted`, the
 * hash field `ats`), while `token` still holds its lock: the job was claimed, never started.
 * BullMQ's `moveToWait` leaves the count as it is, so each hand-back (a pause, a stop, a purge, a
 * surplus claim) counted as a start, and `maxStartedAttempts` failed jobs that never ran.
 *
 * Once per claim (its token): a hand-back retried after `moveToWait` failed, or a reply lost and
 * the command sent again, takes back no second start. A key of its own notes the token it was
 * done for, for a minute (the job's hash, which BullMQ owns, is left as it is).
 */
const UNCOUNT_START = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if redis.call('GET', KEYS[3]) == ARGV[1] then return 1 end
redis.call('SET', KEYS[3], ARGV[1], 'PX', 60000)
local started = tonumber(redis.call('HGET', KEYS[1], 'ats'))
if started ~= nil and started > 0 then redis.call('HINCRBY', KEYS[1], 'ats', -1) end
return 1`;

/** The Redis clients {@link UNCOUNT_START} is defined on (once each). */
const uncountDefined = new WeakSet<object>();

/**
 * Hands `job` back to waiting (`moveToWait`), its start not counted (see {@link UNCOUNT_START}),
 * through the job's own backend, as `moveToWait` goes: a closed adapter is not opened again.
 */
async function handBack(job: BullJob, token: string): Promise<void> {
  const jobKey = (job as unknown as { toKey(id: string): string }).toKey(job.id as string);
  const client = await backendOf(job).client;
  if (!uncountDefined.has(client)) {
    client.defineCommand('qmuxUncountStart', { numberOfKeys: 3, lua: UNCOUNT_START });
    uncountDefined.add(client);
  }
  await client.runCommand('qmuxUncountStart', [jobKey, `${jobKey}:lock`, `${jobKey}:qmux-uncounted`, token]);
  await job.moveToWait(token);
}

/**
 * Closes `worker` without waiting for Redis: its connections are destroyed (disconnect, not
 * quit), so that a hung server holds neither the close nor the process. Commands still unanswered
 * fail; the claims they were about lapse in Redis, which gives the jobs out again.
 */
async function destroy(worker: BullWorker): Promise<void> {
  const backend = worker.getBackend() as unknown as { client: Promise<BullClient>; blockingClient?: Promise<BullClient> };
  for (const pending of [backend.client, backend.blockingClient]) {
    const client = pending === undefined ? undefined : await settledWithin(pending, UNREACHABLE_CLOSE_MS);
    if (client === undefined) continue;
    // ioredis's disconnect ends the socket (a FIN), which stays open until the server answers
    // it; a hung server never does. Destroyed, it closes now, and its commands fail.
    client.disconnect();
    (client as unknown as { stream?: { destroy?(): void } }).stream?.destroy?.();
  }
  // A forced close stops its timers (the stalled check) too; one already under way (a QUIT
  // waiting for Redis) ends once its connection is destroyed.
  await settledWithin(
    worker.close(true).catch(() => undefined),
    UNREACHABLE_CLOSE_MS,
  );
}

/** What `pending` resolves to within `ms`, else (or if it rejects) `undefined`; the timer does not keep the process alive. */
function settledWithin<V>(pending: Promise<V | undefined>, ms: number): Promise<V | undefined> {
  return new Promise<V | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    timer.unref?.();
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(undefined);
      },
    );
  });
}

/**
 * A BullMQ queue as a remote source of a qmux worker (SPEC 9), through BullMQ's
 * manual-processing API: a BullMQ `Worker` with no processor and `autorun: false`, one token
 * per job, `getNextJob` (its blocking fetch waits while the queue is empty: no polling loop),
 * `moveToCompleted` / `moveToFailed` with `fetchNext` false, `moveToWait` to hand a job back,
 * `extendJobLocks` to renew locks and `startStalledCheckTimer` so that jobs of a consumer that
 * died go back to waiting. Producers use BullMQ's own `Queue.add`; `attempts` and `backoff` set
 * there decide retries.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns (stored as the job's return value)
 * @example
 * ```ts
 * import { Worker } from 'qmux';
 * import { BullMQSource } from 'qmux/bullmq';
 *
 * const worker = new Worker(async (job) => send(job.data), { concurrency: 8 });
 * worker.bindRemote(new BullMQSource('emails', { connection: { host: '127.0.0.1', port: 6379 } }), { prefetch: 8 });
 * ```
 */
export class BullMQSource<T = unknown, R = unknown> implements RemoteAdapter<T, R> {
  /** The BullMQ queue's name. */
  readonly queueName: string;
  /** How long a claim (BullMQ's lock) lasts unless renewed, ms: the `lockDuration` option, default 30 000. */
  readonly lockDuration: number;
  readonly #options: BullMQSourceOptions;
  #worker: BullWorker<T, R> | undefined = undefined;
  #tokens = 0;
  /** A blocking fetch left running by a claim that was aborted: the next claim takes it over. */
  #pending: Promise<BullJob<T> | undefined> | undefined = undefined;
  #watcher: ((error: unknown) => void) | undefined = undefined;
  /** Whether the last claim found jobs: the next one first tries without blocking. */
  #busyQueue = false;
  /** Set when Redis left a fetch unanswered past its bound with the connection up (it hangs): the close then destroys the connections at once. */
  #hung = false;
  /** The close in progress, if any. */
  #closing: Promise<void> | undefined = undefined;

  /**
   * @param queueName - the BullMQ queue to consume
   * @param options - BullMQ's worker options; `connection` (ioredis options or an ioredis instance) is required
   */
  constructor(queueName: string, options: BullMQSourceOptions) {
    check.nonEmptyString('new BullMQSource(queueName)', queueName);
    if (options === null || typeof options !== 'object' || options.connection == null) {
      throw new TypeError(
        `qmux: new BullMQSource(queueName, options) needs options with a connection (ioredis options or an ioredis instance), got ${check.describeValue(options)}`,
      );
    }
    for (const key of ['autorun', 'concurrency', 'limiter', 'useWorkerThreads']) {
      if (key in options)
        throw new TypeError(
          `qmux: new BullMQSource(): option "${key}" is BullMQ's processing loop, which qmux replaces; use the bind options of worker.bindRemote()`,
        );
    }
    checkBullOptions(options);
    this.queueName = queueName;
    this.#options = options;
    this.lockDuration = options.lockDuration ?? 30_000;
  }

  /** The BullMQ worker (made on first claim), for what this class does not cover. */
  get bullWorker(): BullWorker<T, R> | undefined {
    return this.#worker;
  }

  #open(): BullWorker<T, R> {
    let worker = this.#worker;
    if (worker === undefined) {
      worker = new bullmq.Worker<T, R>(this.queueName, null, { ...this.#options, autorun: false });
      readUnreadableJobs(worker);
      // Connection faults come here (an EventEmitter 'error' with no listener would crash the host).
      worker.on('error', (error) => this.#watcher?.(error));
      worker.startStalledCheckTimer().catch((error: unknown) => this.#watcher?.(error));
      this.#worker = worker;
    }
    return worker;
  }

  #fetch(worker: BullWorker<T, R>, block: boolean): Promise<BullJob<T> | undefined> {
    return worker.getNextJob(`${worker.id}:${++this.#tokens}`, { block }) as Promise<BullJob<T> | undefined>;
  }

  /**
   * Claims up to `max` jobs. While the queue had jobs at the last claim, `max` fetches without
   * blocking are sent together (one round trip); when they find none, or the queue was empty,
   * one blocking fetch waits for a job (BullMQ's blocking wait, not a polling loop), then up to
   * `max - 1` more are sent together.
   */
  async claim(max: number, signal: AbortSignal): Promise<readonly RemoteJob<T>[]> {
    const worker = this.#open();
    if (this.#pending === undefined && this.#busyQueue && !signal.aborted) {
      const burst = await this.#burst(worker, max);
      if (burst.length > 0) return this.#runnable(worker, burst);
      this.#busyQueue = false;
    }
    const first = this.#pending ?? this.#fetch(worker, true);
    this.#pending = undefined;
    let job: BullJob<T> | undefined | typeof ABORTED;
    if (signal.aborted) job = ABORTED;
    else {
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<typeof ABORTED>((resolve) => {
        onAbort = () => resolve(ABORTED);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        job = await Promise.race([first, aborted]);
      } finally {
        signal.removeEventListener('abort', onAbort as () => void);
      }
    }
    if (job === ABORTED) {
      // The worker may not start jobs (pause, stop, halt, close): a fetch left waiting would claim
      // the next job to arrive, and no one would renew it. Interrupt it and hand back what it got,
      // unless Redis is down: the fetch then waits for a connection, and the close that follows
      // once none of the source's jobs runs ends it by force.
      if (!(await reachable(worker))) {
        this.#pending = first;
        return [];
      }
      // Bounded: a Redis that hangs with the connection open (a stopped server) answers neither
      // the fetch nor the reconnection, and the claim must return early all the same. Past the
      // bound the fetch is left as after an outage, for the next claim or the close to end.
      let late = false;
      const handedBack = handBackBlocking(worker, first).then(async () => {
        // Not once given up on, nor for a worker closed meanwhile: that would open a connection.
        if (!late && this.#worker === worker) await (worker.getBackend() as BlockingBackend).reconnectBlocking?.().catch(() => undefined);
        return true;
      });
      if ((await settledWithin(handedBack, UNREACHABLE_CLOSE_MS)) !== true) {
        late = true;
        this.#hung = true;
        this.#pending = first;
      }
      return [];
    }
    if (job === undefined) {
      // BullMQ ends a blocking wait early, with nothing, when its connection fails: that is no
      // answer from Redis, and must not pass for one (it would end an outage).
      const status = (await worker.getBackend().client).status;
      if (status !== 'ready') throw new Error(`qmux: the connection to Redis is ${status}`);
      return [];
    }
    this.#busyQueue = true;
    this.#hung = false;
    const jobs: BullRemoteJob<T>[] = [this.#wrap(job)];
    if (max > 1 && !signal.aborted) for (const next of await this.#burst(worker, max - 1)) jobs.push(next);
    return this.#runnable(worker, jobs);
  }

  /**
   * The claimed jobs that may run. The others (see {@link unrunnable}) fail in BullMQ at once with
   * an `UnrecoverableError`, unrun, as BullMQ's own Worker fails them: no handler, no local event.
   * So does a job whose data is not JSON, with a reason that says so.
   */
  async #runnable(worker: BullWorker<T, R>, jobs: BullRemoteJob<T>[]): Promise<BullRemoteJob<T>[]> {
    const maxStarted = worker.opts.maxStartedAttempts;
    if (!jobs.some((remote) => unrunnable(remote.job, maxStarted) !== undefined)) return jobs;
    const runnable: BullRemoteJob<T>[] = [];
    for (const remote of jobs) {
      const why = unrunnable(remote.job, maxStarted);
      if (why === undefined) runnable.push(remote);
      else {
        try {
          await remote.job.moveToFailed(new bullmq.UnrecoverableError(why), remote.token, false);
        } catch (error) {
          if (!(asLockLost(error, remote, 'fail') instanceof LockLostError)) throw error;
        }
      }
    }
    return runnable;
  }

  /** Up to `count` jobs from fetches that do not block, sent together. */
  async #burst(worker: BullWorker<T, R>, count: number): Promise<BullRemoteJob<T>[]> {
    const fetches: Promise<BullJob<T> | undefined>[] = [];
    for (let i = 0; i < count; i++) fetches.push(this.#fetch(worker, false));
    const jobs: BullRemoteJob<T>[] = [];
    for (const next of await Promise.all(fetches)) if (next !== undefined) jobs.push(this.#wrap(next));
    return jobs;
  }

  #wrap(job: BullJob<T>): BullRemoteJob<T> {
    return new BullRemoteJob(job, job.token as string);
  }

  /** Completes the job with the handler's result (`moveToCompleted`, `fetchNext` false). */
  async complete(job: RemoteJob<T>, result: R): Promise<void> {
    const remote = job as BullRemoteJob<T>;
    // BullMQ stores the result as JSON, and throws before it reaches Redis for one that cannot be
    // (a BigInt, a cycle): that is no outage, and retrying it would hold the job active for good.
    // The attempt fails instead, as under BullMQ's own Worker (its attempts decide a retry).
    let unstorable: unknown;
    try {
      JSON.stringify(result);
    } catch (error) {
      unstorable = error;
    }
    if (unstorable !== undefined) {
      const reason = new TypeError(`qmux: BullMQ cannot store the result of job ${remote.id} as JSON: ${messageOf(unstorable)}`, {
        cause: unstorable,
      });
      return this.fail(job, reason);
    }
    try {
      await remote.job.moveToCompleted(result, remote.token, false);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (typeof code === 'number' && CHILDREN_CODES.has(code)) return this.fail(job, error);
      throw asLockLost(error, remote, 'complete');
    }
  }

  /** Fails this attempt (`moveToFailed`, `fetchNext` false); the job's `attempts` and `backoff` decide a retry. */
  async fail(job: RemoteJob<T>, error: unknown): Promise<void> {
    const remote = job as BullRemoteJob<T>;
    const reason = error instanceof Error ? error : new Error(safeString(error));
    try {
      await remote.job.moveToFailed(reason, remote.token, false);
    } catch (moveError) {
      const lost = asLockLost(moveError, remote, 'fail');
      if (lost !== moveError || !(await retryRefused(remote.job, reason, moveError))) throw lost;
      // BullMQ could not work out the retry (the job's backoff names a strategy this consumer
      // lacks, or the strategy threw) and wrote nothing: retried, the call would fail the same
      // way for ever, the job held active. Its attempt fails it for good instead, saying why, as
      // UnrecoverableError does (BullMQ's own worker leaves it active until its lock lapses).
      const final = new bullmq.UnrecoverableError(`${reason.message} (not retried: ${messageOf(moveError)})`);
      try {
        await remote.job.moveToFailed(final, remote.token, false);
      } catch (finalError) {
        throw asLockLost(finalError, remote, 'fail');
      }
    }
  }

  /** Hands the job back to waiting (`moveToWait`), where any consumer can take it. */
  async release(job: RemoteJob<T>): Promise<void> {
    const remote = job as BullRemoteJob<T>;
    try {
      await handBack(remote.job, remote.token);
    } catch (error) {
      throw asLockLost(error, remote, 'release');
    }
  }

  /** Renews the locks of `jobs` in one call; resolves to those whose lock is gone. */
  async extend(jobs: readonly RemoteJob<T>[]): Promise<readonly RemoteJob<T>[]> {
    const worker = this.#open();
    const remotes = jobs as readonly BullRemoteJob<T>[];
    const failed = await worker.extendJobLocks(
      remotes.map((job) => job.id),
      remotes.map((job) => job.token),
      this.lockDuration,
    );
    if (failed.length === 0) return [];
    const lost = new Set(failed);
    return remotes.filter((job) => lost.has(job.id));
  }

  /** Stores a progress report on the BullMQ job (`updateProgress`). */
  async progress(job: RemoteJob<T>, value: unknown): Promise<void> {
    await (job as BullRemoteJob<T>).job.updateProgress(value as number | object);
  }

  /** @internal The worker listens for connection faults here. */
  watch(listener: (error: unknown) => void): void {
    this.#watcher = listener;
  }

  /**
   * Closes the BullMQ worker and its connections (a later claim reopens them). A blocking fetch
   * still waiting is interrupted; a job it got meanwhile goes back to waiting.
   */
  close(): Promise<void> {
    // A close while one is in progress (a source closed while its paused worker quiesces it)
    // resolves when that one has closed the connections, not before.
    if (this.#closing !== undefined) return this.#closing;
    const worker = this.#worker;
    if (worker === undefined) return Promise.resolve();
    this.#worker = undefined;
    const closing = this.#close(worker).finally(() => {
      if (this.#closing === closing) this.#closing = undefined;
    });
    this.#closing = closing;
    return closing;
  }

  async #close(worker: BullWorker<T, R>): Promise<void> {
    const pending = this.#pending;
    this.#pending = undefined;
    const hung = this.#hung;
    this.#hung = false;
    if (hung) return destroy(worker);
    const closed = (async () => {
      const up = await reachable(worker);
      // With Redis down, a fetch still waiting waits for a connection that the forced close below
      // ends: it got nothing from Redis, and nothing is waited for (interrupting it would wait too).
      if (pending !== undefined && up) await handBackBlocking(worker, pending);
      // Redis down: quitting would wait in the connection's offline queue for as long; disconnect instead.
      await worker.close(!up);
    })();
    const outcome = await settledWithin(
      closed.then(
        () => ({ failed: false, error: undefined }),
        (error: unknown) => ({ failed: true, error }),
      ),
      UNREACHABLE_CLOSE_MS,
    );
    if (outcome?.failed === true) throw outcome.error;
    if (outcome !== undefined) return;
    // Redis hangs with the connections open (a stopped server, a link that drops packets): QUIT
    // and the hand-back wait for it for ever, and an open connection keeps the process alive.
    // The connections are destroyed instead (disconnect, not quit); what they were sending is
    // lost, and the claims it was about lapse in Redis, which gives the jobs out again.
    await destroy(worker);
  }
}
