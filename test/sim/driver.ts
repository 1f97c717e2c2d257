/**
 * The seeded simulator of SPEC 12: a small test-side shell (the "driver") that drives the core
 * alone on virtual time, with an independent model of what every transition must lead to.
 *
 * No shell object takes part (SPEC 12): no `Worker`, no `Queue` or other public source, no job
 * handle, no option parsing and none of the shell's add rules (capacity, closed sources, ids,
 * `keys.by`). The driver makes the core's own records itself: each source is a {@link Lane}
 * bound with `core.bind`, each job a {@link CoreJob} (a test-only subclass for a keyed or a
 * priority job) admitted with `core.admit`. Around the core it does what `src/shell/worker.ts` does
 * (its `#add`, `#pass`, `#expire`, `#finish`, `#retryVerdict`, and draining the outbox after
 * every transition), but owns a virtual clock and models handlers instead of running them:
 * when an attempt starts it draws
 * whether it will succeed or fail, synchronously or at some later virtual time, hang, or settle
 * after its timeout. In half the runs user code (retry hooks, listeners, a handler's synchronous
 * part) takes virtual time, in the middle of a pass too, and every start's deadline and rate
 * windows must begin after the last user code returned (issue 33: never in the past). Every
 * step is one random operation then a decision pass; after both, every invariant of SPEC 8 (and
 * a few more) is checked against the model; at random steps, every read the shell and the
 * strategies make (lengths, views, ages, key figures, status, stats) is made and the core's
 * whole state must be left identical (see `purity.ts`). A failure throws {@link SimFailure};
 * the runner prefixes the seed and step that replay it.
 */
import { Core, type Origin } from '../../src/core/core.js';
import { KeyedJobs, type KeyLimits } from '../../src/core/keys/keyed-jobs.js';
import { CoreJob, type Deadline, type KeyedJob, State, STATUS, UNTIMED } from '../../src/core/job-record.js';
import { Lane, type LaneOptions } from '../../src/core/lane.js';
import { Note } from '../../src/core/outbox.js';
import { PROMOTE_STEP } from '../../src/core/promotion.js';
import { retryDelay } from '../../src/core/retry-decision.js';
import { isSampled, isTimed, Timed } from '../../src/core/sampling.js';
import { Phase, type LifecycleCall, type WorkerStatus } from '../../src/core/worker-state.js';
import type { EligibleSet } from '../../src/core/eligible-set.js';
import type { DeadLetter } from '../../src/api/dead-letter.js';
import { InvalidStateError, InvariantError, TimeoutError } from '../../src/api/errors.js';
import { FifoDueJobs, PriorityDueJobs } from '../../src/core/due/due-jobs.js';
import type { RateWindow } from '../../src/core/rate-window.js';
import type { BackoffSchedule, RetryOptions } from '../../src/api/retry.js';
import { BOUND, ENTERED, type FastPicker, fastPickerOf, LEFT, PICK_ELIGIBLE, UNBOUND } from '../../src/core/fast-picker.js';
import { Strategy } from '../../src/strategies/index.js';
import type { Picker, SourceView, Strategy as StrategyType } from '../../src/api/strategy.js';
import { Rng } from './prng.js';
import { firstDifference, READS, stateFingerprint } from './purity.js';

/** A broken invariant or a disagreement with the model. */
export class SimFailure extends Error {
  override name = 'SimFailure';
}

/** What one run may change, for the simulator's own tests. */
export interface SimOptions {
  /** Random steps before the final drain. */
  steps: number;
  /** Called with the core once made: a test breaks it here to see the simulator catch it. */
  sabotage?: (core: Core) => void;
  /** The core's promotion batch (`CoreConfig.promoteStep`); a small one keeps promotions in progress across steps. */
  promoteStep?: number;
  /**
   * The driver's pass starts the next jobs with the reading it took before timing attempts out,
   * as the shell did before issue 33 (defect 4): a test breaks the shell here to see the
   * simulator catch it.
   */
  staleClockAfterExpire?: boolean;
  /** How often, at each of a step's two points, the reads are checked to change nothing (default QMUX_SIM_READS, else 0.03). */
  readChecks?: number;
}

/** What one run did, for the report. */
export interface SimSummary {
  /** Steps run (counted as they run). */
  steps: number;
  /** Times the reads were made and found to change nothing. */
  reads: number;
  jobs: number;
  starts: number;
  virtualMs: number;
}

/** Every note's name, by note: a note added to `Note` and not here fails to compile. */
const NOTE_NAME: Record<Note, string> = {
  [Note.Started]: 'Started',
  [Note.Succeeded]: 'Succeeded',
  [Note.Retrying]: 'Retrying',
  [Note.Failed]: 'Failed',
  [Note.RemoteRetrying]: 'RemoteRetrying',
  [Note.Cancelled]: 'Cancelled',
  [Note.TimedOut]: 'TimedOut',
  [Note.Shrunk]: 'Shrunk',
  [Note.Paused]: 'Paused',
  [Note.Resumed]: 'Resumed',
  [Note.Halted]: 'Halted',
};
const NOTE_NAMES: readonly string[] = Object.keys(NOTE_NAME).map((note) => NOTE_NAME[Number(note) as Note]);
type MState = 'waiting' | 'held' | 'delayed' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** What the driver binds a lane with: the core's {@link LaneOptions}, and per-key limits for a keyed lane. */
interface LaneSpec extends LaneOptions {
  keys?: KeyLimits;
  /** The weight of a key (what `keys.weight` answers in the shell), for a lane with weighted keys. */
  keyWeight?: (key: string) => number;
}

/** A job of a priority lane (the core reads its `priority`): a test-only record, as the shell's handle is one. */
class SimPriorityJob extends CoreJob {
  readonly #priority: number;
  constructor(home: Lane, data: unknown, priority: number) {
    super(home, data, UNTIMED, State.Due);
    this.#priority = priority;
  }
  override get priority(): number {
    return this.#priority;
  }
}

/** A job of a keyed lane: the fields the key machinery keeps on it (see `KeyedJob`). */
class SimKeyedJob extends CoreJob implements KeyedJob {
  readonly keyName: string;
  keyState: object | undefined = undefined;
  nextInKey: KeyedJob | undefined = undefined;
  readonly #priority: number;
  constructor(home: Lane, data: unknown, priority: number, key: string) {
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

/** What a new job is made with: the per-job options the core keeps in its extras. */
interface JobSpec {
  delay?: number;
  timeout?: number;
  retry?: RetryOptions;
  /** Added with a signal that had already aborted: it settles cancelled and never joins. */
  abortedWith?: string;
}

/** The model's retry policy of a job: the job's own fields over the worker's (SPEC 6). */
function policyOf(worker: RetryOptions | undefined, job: RetryOptions | undefined): RetryOptions | undefined {
  if (job === undefined || worker === undefined) return job ?? worker;
  return {
    ...worker,
    ...(job.attempts === undefined ? {} : { attempts: job.attempts }),
    ...(job.backoff === undefined ? {} : { backoff: job.backoff }),
    ...(job.retryIf === undefined ? {} : { retryIf: job.retryIf }),
  };
}

/** Whether a record is a due job: waiting in its due order, or due but not moved yet (a promotion in progress). */
function isDue(record: CoreJob): boolean {
  return record.state === State.Due || (record.state === State.Delayed && record.dueAt <= (record.home as Lane).delayed.horizon);
}

/** The core's state for a job the model has in `state` (a parked redrive is a waiting record). */
function stateOf(state: MState): State {
  switch (state) {
    case 'waiting':
    case 'held':
      return State.Due;
    case 'delayed':
      return State.Delayed;
    case 'running':
      return State.Running;
    case 'succeeded':
      return State.Succeeded;
    case 'failed':
      return State.Failed;
    case 'cancelled':
      return State.Cancelled;
  }
}
type StrategyName = keyof typeof Strategy;
type Phase$ = 'initiated' | 'started' | 'paused' | 'stopped' | 'halted';

function settled(state: MState): boolean {
  return state === 'succeeded' || state === 'failed' || state === 'cancelled';
}

/** The model of one job. */
class MJob {
  state: MState = 'waiting';
  /** Waiting: when it became due (its place in due order). Delayed: when it comes due. */
  due = 0;
  /** Whether the core holds it with `dueAt === UNTIMED` (admitted without the time). */
  untimed = false;
  attempts = 0;
  /** The attempt whose handler has not settled, if any. */
  attempt: MAttempt | undefined = undefined;
  /** Completed, Failed and Cancelled notes seen: exactly one by the end. */
  terminalNotes = 0;
  /** A redrive parked behind this job's running handler. */
  successor: MJob | undefined = undefined;
  constructor(
    readonly n: number,
    readonly rec: CoreJob,
    readonly src: MSource,
    readonly priority: number,
    readonly ownTimeout: number | undefined,
  ) {}
}

/** The model of one attempt: a handler that has started and not yet settled. */
interface MAttempt {
  readonly job: MJob;
  readonly n: number;
  /** When the modelled handler settles (virtual ms); `Infinity` while it hangs. */
  settleAt: number;
  ok: boolean;
  sync: boolean;
  /** The armed deadline, until it fires or the attempt ends or is cancelled. */
  deadlineAt: number | undefined;
  /** The retry verdict of a timeout, applied once the handler settles. */
  timedOutRetry: number | undefined;
}

/** The model of one source. */
class MSource {
  retiring = false;
  /** Left the list (a drained, retired lane). */
  left = false;
  running = 0;
  /** Waiting jobs: due, delayed and held. */
  readonly jobs = new Set<MJob>();
  /** Start times, for the rate limit. */
  readonly starts: number[] = [];
  constructor(
    readonly lane: Lane,
    readonly kind: 'queue' | 'pq' | 'sub',
    readonly options: LaneSpec,
    readonly bindOrder: number,
  ) {}
  get name(): string {
    return this.lane.name;
  }
  get rank(): number {
    return this.options.priority ?? Infinity;
  }
  get maxRunning(): number {
    return this.options.concurrency ?? Infinity;
  }
  count(state: MState): number {
    let n = 0;
    for (const job of this.jobs) if (job.state === state) n++;
    return n;
  }
  /** `SourceView.length`: due jobs, in keys that are not paused for a keyed queue (SPEC 10). */
  viewLength(): number {
    let n = 0;
    for (const job of this.jobs) if (job.state === 'waiting' && (this.keys === undefined || !this.pausedKeys.has(job.rec.key as string))) n++;
    return n;
  }
  hasDue(): boolean {
    for (const job of this.jobs) if (job.state === 'waiting') return true;
    return false;
  }
  rateAllows(now: number): boolean {
    const rate = this.options.rateLimit;
    if (rate === undefined) return true;
    let recent = 0;
    for (let i = this.starts.length - 1; i >= 0 && now - (this.starts[i] as number) < rate.interval; i--) recent++;
    return recent < rate.limit;
  }
  openAt(): number {
    const rate = this.options.rateLimit;
    if (rate === undefined || this.starts.length < rate.limit) return -Infinity;
    return (this.starts[this.starts.length - rate.limit] as number) + rate.interval;
  }
  eligible(now: number): boolean {
    return this.running < this.maxRunning && this.rateAllows(now) && this.hasDue() && (this.keys === undefined || this.hasEligibleKey(now));
  }
  // ---- keys (SPEC 10), modelled independently of src/core/keys
  /** The keyed queue's limits, when bound with `keys`. */
  keys: KeyLimits | undefined = undefined;
  readonly pausedKeys = new Set<string>();
  readonly keyRunning = new Map<string, number>();
  readonly keyStarts = new Map<string, number[]>();
  keyRateAllows(key: string, now: number): boolean {
    const rate = this.keys?.rateLimit;
    if (rate === undefined) return true;
    const starts = this.keyStarts.get(key) ?? [];
    let recent = 0;
    for (let i = starts.length - 1; i >= 0 && now - (starts[i] as number) < rate.interval; i--) recent++;
    return recent < rate.limit;
  }
  keyOpenAt(key: string): number {
    const rate = this.keys?.rateLimit;
    const starts = this.keyStarts.get(key) ?? [];
    if (rate === undefined || starts.length < rate.limit) return -Infinity;
    return (starts[starts.length - rate.limit] as number) + rate.interval;
  }
  /** A key may run but for its rate window: it has a due job, is not paused, is under keys.concurrency. */
  keyWants(key: string): boolean {
    if (this.pausedKeys.has(key) || (this.keyRunning.get(key) ?? 0) >= (this.keys as KeyLimits).concurrency) return false;
    for (const job of this.jobs) if (job.state === 'waiting' && job.rec.key === key) return true;
    return false;
  }
  keyEligible(key: string, now: number): boolean {
    return this.keyWants(key) && this.keyRateAllows(key, now);
  }
  hasEligibleKey(now: number): boolean {
    for (const job of this.jobs) if (job.state === 'waiting' && this.keyEligible(job.rec.key as string, now)) return true;
    return false;
  }
  /** Keys that must be remembered: with jobs waiting (held ones too) or running, or paused. */
  activeKeys(): Set<string> {
    const keys = new Set<string>(this.pausedKeys);
    for (const job of this.jobs) keys.add(job.rec.key as string);
    for (const [key, n] of this.keyRunning) if (n > 0) keys.add(key);
    return keys;
  }
}

/** The key the driver gives a job of a keyed lane, from its data (always a number here). */
function simKey(data: unknown): string {
  return `k${(data as number) % 4}`;
}

/** `a` goes before `b` in the list: priority number (unranked last), then bind order. */
function listBefore(a: MSource, b: MSource): boolean {
  return a.rank < b.rank || (a.rank === b.rank && a.bindOrder < b.bindOrder);
}

/** Wraps the strategy's picker: counts calls, and throws once when armed (an injected fault). */
class FaultyPicker implements Picker {
  armed = false;
  fired = false;
  calls = 0;
  constructor(readonly inner: Picker) {}
  pick(list: readonly SourceView[]): SourceView {
    this.calls++;
    if (this.armed) {
      this.armed = false;
      this.fired = true;
      throw new Error('injected strategy fault');
    }
    return this.inner.pick(list);
  }
  served(view: SourceView): void {
    this.inner.served?.(view);
  }
}

/**
 * The same, for a built-in picker: the dispatcher drives it through its fast interface (the
 * eligible set), which must give what the reference picks of the model give.
 */
class FaultyFastPicker extends FaultyPicker implements FastPicker {
  declare readonly inner: FastPicker;
  [PICK_ELIGIBLE](eligible: EligibleSet, list: readonly Lane[]): Lane {
    this.calls++;
    if (this.armed) {
      this.armed = false;
      this.fired = true;
      throw new Error('injected strategy fault');
    }
    return this.inner[PICK_ELIGIBLE](eligible, list);
  }
  [BOUND](source: Lane): void {
    this.inner[BOUND]?.(source);
  }
  [UNBOUND](source: Lane): void {
    this.inner[UNBOUND]?.(source);
  }
  [ENTERED](source: Lane): void {
    this.inner[ENTERED]?.(source);
  }
  [LEFT](source: Lane): void {
    this.inner[LEFT]?.(source);
  }
}

type Expected = readonly [Note, MJob | undefined, number?];

/**
 * What a run stresses, besides everything: `churn` binds and retires lanes often, starting from
 * one source (the single-source path and sources leaving the list); `wide` runs many slots with
 * many timeouts (the deadline heap).
 */
type Flavour = 'plain' | 'churn' | 'wide';

interface Config {
  flavour: Flavour;
  concurrency: number;
  strategy: StrategyName;
  autoRun: boolean;
  timeout: number | undefined;
  retry: RetryOptions | undefined;
  deadLetterLimit: number;
  /** Admit every job with the time, never with UNTIMED (both are allowed). */
  alwaysClock: boolean;
  /**
   * User code (retry hooks, listeners, a handler's synchronous part) takes virtual time now and
   * then: the clock moves while the driver runs it, in the middle of a pass too.
   */
  slowUserCode: boolean;
}

/** How often, at each of a step's two points, the reads are checked to change nothing: QMUX_SIM_READS (default 0.03). */
const READ_CHECKS = Number(process.env.QMUX_SIM_READS ?? 0.03);
/** Operations kept for a failure's report: QMUX_SIM_LOG lines (default 60). */
const LOG_LINES = Number(process.env.QMUX_SIM_LOG ?? 60);
/** The random operations of a step, and their weights. */
const OPERATIONS = [
  ['add', 24],
  ['addMany', 5],
  ['advance', 30],
  ['cancel', 8],
  ['purge', 0.7],
  ['lifecycle', 6],
  ['concurrency', 3],
  ['bind', 2],
  ['retire', 1.5],
  ['redrive', 2.5],
  ['release', 3],
  ['fault', 0.4],
  ['dupName', 0.4],
  ['pauseKey', 1.5],
] as const;
/** More binds and retirements: lanes come and go, the list is often one lane long. */
const CHURN_OPERATIONS = OPERATIONS.map(([op, weight]) =>
  op === 'bind' || op === 'retire' ? ([op, 6] as const) : ([op, weight] as const),
) as unknown as typeof OPERATIONS;
const FLAVOURS = [
  ['plain', 6],
  ['churn', 2],
  ['wide', 2],
] as const;
const WHEN_STARTED = [
  ['pause', 4],
  ['stop', 2],
  ['start', 1.5],
  ['resume', 1.5],
] as const;
const WHEN_NOT_STARTED = [
  ['start', 4],
  ['resume', 4],
  ['pause', 1],
  ['stop', 1],
] as const;

const HANDLER_ERROR = new Error('modelled handler failed');
const RESULT = Object.freeze({ ok: true });
const retryIfStub = (): boolean => true;
const backoffStub = (): number => 0;

export class Simulation {
  readonly rng: Rng;
  readonly cfg: Config;
  readonly core: Core;
  readonly picker: FaultyPicker;
  now = 0;
  stepNo = 0;
  /**
   * Draws how long user code takes: apart from {@link rng}, so that a run with slow user code
   * makes the same operations as without (the times differ).
   */
  readonly #userRng: Rng;
  /** When user code last returned (virtual ms): no start may date a deadline or a window before it. */
  #userCodeReturned = 0;
  /** The time the current (or last) pass read first, with which it timed attempts out. */
  #passRead = 0;
  readonly log: string[] = [];
  readonly sources: MSource[] = [];
  readonly #byLane = new Map<Lane, MSource>();
  readonly #jobs = new Map<CoreJob, MJob>();
  /** Jobs not settled, or settled with a handler still running. */
  readonly #live = new Set<MJob>();
  /** A few settled jobs, to cancel again. */
  readonly #settledJobs: MJob[] = [];
  readonly #inFlight = new Set<MAttempt>();
  /** The lanes a publish delivers to (a topic's subscriptions, not retired). */
  readonly #topicSubs: MSource[] = [];
  /** Whether an admit of this step noted the first of a batch of adds (see `Core.endAddTick`). */
  #tickNoted = false;
  /** Draws when the reads are checked to change nothing: apart from {@link rng}, like {@link #userRng}. */
  readonly #readRng: Rng;
  /** Steps run, counted as they run. */
  #stepsRun = 0;
  /** Read checks made (see {@link checkReads}). */
  readChecks = 0;
  /** The dead letters as the model has them, oldest first. */
  readonly #dead: { job: MJob; entry: DeadLetter | undefined }[] = [];
  readonly #tally: number[] = NOTE_NAMES.map(() => 0);
  #deadNotes = 0;
  /** Starts returned by `core.next` and successes reported by `core.succeed`: the two consequences that need no note. */
  #starts = 0;
  #completions = 0;
  #created = 0;
  #phase: Phase$;
  #passing = false;
  #final = false;
  #bindCount = 0;
  #sourceCount = 0;
  #jobCount = 0;
  /** Reference state of RoundRobin: last served, and the source served without asking. */
  #rrLast: MSource | undefined = undefined;
  #rrUnasked: MSource | undefined = undefined;
  /** Reference state of Weighted. */
  readonly #credits = new Map<MSource, number>();
  #listCache: MSource[] | undefined = undefined;
  /** The core's promotion batch. */
  get #batch(): number {
    return this.options.promoteStep ?? PROMOTE_STEP;
  }
  /** What the model says is left of the turn's batch for starts to order (see `Promotion.orderBacklog`). */
  #orderBudget = 0;
  readonly #operations: typeof OPERATIONS;

  constructor(
    readonly seed: number,
    readonly options: SimOptions,
  ) {
    const rng = (this.rng = new Rng(seed));
    this.#userRng = new Rng(seed ^ 0x5eed_c10c);
    this.#readRng = new Rng(seed ^ 0x0ead_0001);
    const flavour = rng.weighted(FLAVOURS);
    const wide = flavour === 'wide';
    this.cfg = {
      flavour,
      concurrency: wide ? rng.int(6, 16) : rng.chance(0.08) ? Infinity : rng.int(1, 4),
      strategy: rng.pick(['Priority', 'RoundRobin', 'MaxLen', 'MinLen', 'Weighted'] as const),
      autoRun: rng.chance(0.6),
      timeout: rng.chance(wide ? 0.6 : 0.3) ? rng.int(8, 60) : undefined,
      retry: rng.chance(0.6) ? this.#randomRetry(true) : undefined,
      deadLetterLimit: rng.pick([0, 1, 3, 1000]),
      alwaysClock: rng.chance(0.25),
      slowUserCode: this.#userRng.chance(0.5),
    };
    const strategy: StrategyType = Strategy[this.cfg.strategy];
    const inner = strategy.create();
    const fast = fastPickerOf(inner);
    this.picker = fast === undefined ? new FaultyPicker(inner) : new FaultyFastPicker(fast);
    this.core = new Core({
      concurrency: this.cfg.concurrency,
      picker: this.picker,
      strategyName: strategy.name,
      timeout: this.cfg.timeout,
      deadLetterLimit: this.cfg.deadLetterLimit,
      autoRun: this.cfg.autoRun,
      promoteStep: options.promoteStep,
    });
    options.sabotage?.(this.core);
    this.#phase = this.cfg.autoRun ? 'started' : 'initiated';
    this.note(`config ${JSON.stringify({ ...this.cfg, concurrency: String(this.cfg.concurrency), retry: describeRetry(this.cfg.retry) })}`);
    this.#operations = flavour === 'churn' ? CHURN_OPERATIONS : OPERATIONS;
    const initial = flavour === 'churn' ? 1 : rng.int(1, 4);
    for (let i = 0; i < initial; i++) this.#bind();
  }

  // ================================================================ running

  run(): SimSummary {
    // Errors made along the way (timeouts, cancellations) need no stack: capturing one costs
    // more than a whole step.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      for (this.stepNo = 1; this.stepNo <= this.options.steps; this.stepNo++) this.#step();
      this.#finalDrain();
    } finally {
      Error.stackTraceLimit = limit;
    }
    return { steps: this.#stepsRun, jobs: this.#created, starts: this.core.counters.started, reads: this.readChecks, virtualMs: this.now };
  }

  note(line: string): void {
    this.log.push(`[${this.stepNo}] t=${round(this.now)} ${line}`);
    if (this.log.length > LOG_LINES) this.log.shift();
  }

  #step(): void {
    this.#stepsRun++;
    const op = this.rng.weighted(this.#operations);
    switch (op) {
      case 'add':
        this.#opAdd(false);
        break;
      case 'addMany':
        this.#opAdd(true);
        break;
      case 'advance':
        this.#opAdvance();
        break;
      case 'cancel':
        this.#opCancel();
        break;
      case 'purge':
        this.#opPurge();
        break;
      case 'lifecycle':
        // Mostly back to work when stopped or paused, so that most steps find jobs running;
        // every call is still tried from every state.
        this.#lifecycle(this.#phase === 'started' ? this.rng.weighted(WHEN_STARTED) : this.rng.weighted(WHEN_NOT_STARTED));
        break;
      case 'concurrency':
        this.#opConcurrency();
        break;
      case 'bind':
        if (this.#listed().length < 7) this.#bind();
        break;
      case 'retire':
        this.#opRetire();
        break;
      case 'redrive':
        this.#opRedrive();
        break;
      case 'release':
        this.#opRelease();
        break;
      case 'fault':
        if (this.#listed().length >= 2 && this.#phase === 'started') {
          this.picker.armed = true;
          this.note('fault: the next pick throws');
        }
        break;
      case 'pauseKey':
        this.#opPauseKey();
        break;
      case 'dupName':
        this.#opDuplicateName();
        break;
    }
    // The synchronous run of this step's adds is over (what the shell's microtask does).
    if (this.#tickNoted) {
      this.#tickNoted = false;
      this.core.endAddTick();
    }
    this.check(false);
    if (this.#readRng.chance(this.options.readChecks ?? READ_CHECKS)) this.checkReads('after the operation');
    this.pass();
    this.check(true);
    if (this.#readRng.chance(this.options.readChecks ?? READ_CHECKS)) this.checkReads('after the pass');
  }

  /** The end of a run: hung handlers settle, the worker runs, time passes until nothing is left. */
  #finalDrain(): void {
    this.#final = true;
    this.picker.armed = false;
    this.stepNo = this.options.steps + 1;
    this.note('final drain');
    for (const attempt of this.#inFlight) if (attempt.settleAt === Infinity) attempt.settleAt = this.now + this.rng.int(0, 10);
    for (const source of this.sources) {
      for (const key of source.pausedKeys) this.core.resumeKey(source.lane, key);
      source.pausedKeys.clear();
    }
    for (let i = 0; ; i++) {
      if (i > 50_000) this.fail('the final drain did not finish: work is left that nothing runs');
      this.#ensureStarted();
      this.pass();
      this.check(true);
      if (this.#inFlight.size === 0 && this.#modelWaiting() === 0) break;
      // A promotion in progress goes on at the same time (the shell's continuation), then time moves.
      const target = this.core.promotionContinues ? this.now : Math.min(this.#nextSettle(), this.core.wakeAt());
      if (target === Infinity) {
        this.fail(`stuck: ${this.#modelWaiting()} jobs wait and ${this.#inFlight.size} run, but nothing will wake the worker (wakeAt Infinity)`);
      }
      if (target > this.now) this.now = target;
      this.#settleDue();
    }
    for (const job of this.#jobs.values()) {
      if (!settled(job.state)) this.fail(`job #${job.n} never settled (model state ${job.state})`);
      if (job.terminalNotes !== 1) this.fail(`job #${job.n} settled ${job.terminalNotes} times`);
    }
    const core = this.core;
    this.eq(core.queued, 0, 'waiting at the end');
    this.eq(core.delayed, 0, 'delayed at the end');
    this.eq(core.slotsInUse, 0, 'inFlight at the end');
    this.eq(core.deadlines.length, 0, 'deadlines at the end');
    this.eq(core.status, 'idle', 'status at the end');
    for (const source of this.sources) if (source.retiring && !source.left) this.fail(`retired ${source.name} never left the list`);
    // Drained, every key is forgotten once its starts leave its rate window (SPEC 10).
    this.now += 100;
    if (!core.promotionContinues) this.#orderBudget = this.#batch;
    core.promote(this.now);
    for (const source of this.sources) {
      if (source.keys !== undefined && this.#keyCount(source) !== 0) {
        this.fail(`${source.name} still remembers ${this.#keyCount(source)} keys after draining`);
      }
    }
  }

  #ensureStarted(): void {
    const phase = this.#phase;
    if (phase === 'paused') this.#lifecycle('resume');
    else if (phase === 'initiated' || phase === 'halted' || (phase === 'stopped' && this.#inFlight.size === 0)) this.#lifecycle('start');
  }

  // ================================================================ the shell's half

  /** A decision pass, exactly like `Worker#pass`. */
  pass(): void {
    if (this.#passing) return;
    const core = this.core;
    this.#passing = true;
    try {
      let now = core.needsClock ? this.now : UNTIMED;
      this.#passRead = this.now;
      // User code ran while attempts timed out: the starts read the clock again after it.
      if (core.deadlines.length > 0 && this.#expire(now) && core.needsClock && this.options.staleClockAfterExpire !== true) now = this.now;
      // The shell's continuation: a promotion in progress moves a batch on a later turn, whatever the phase.
      if (core.promotionContinues) {
        core.promoteMore();
        this.#orderBudget = this.#batch; // a turn gives the starts of its passes a batch to order
      }
      if (core.phase === Phase.Started) {
        this.#promote(now);
        let starts = 0;
        for (let job = this.#next(now); job !== undefined; job = this.#next(now)) {
          if (++starts > 100_000) this.fail('a pass kept starting jobs');
          this.#run(job);
          if (core.needsClock) {
            now = this.now;
            this.#promote(now);
          }
        }
      }
    } finally {
      this.#passing = false;
    }
  }

  /** `Worker#expire`: times out every attempt whose deadline has passed; returns whether any did. */
  #expire(now: number): boolean {
    const core = this.core;
    let guard = 0;
    for (let deadline = core.deadlines.expired(now); deadline !== undefined; deadline = core.deadlines.expired(now)) {
      if (++guard > 100_000) this.fail('the same deadlines keep expiring');
      this.#timeOut(deadline);
    }
    return guard > 0;
  }

  /**
   * User code runs (retry hooks, listeners, a handler's synchronous part): with slow user code,
   * it sometimes takes virtual time. Either way, the time it returned is what later starts are
   * checked against.
   */
  #userCode(): void {
    if (this.cfg.slowUserCode && this.#userRng.chance(0.3)) this.now += this.#userRng.int(1, 30);
    this.#userCodeReturned = this.now;
  }

  #timeOut(deadline: Deadline): void {
    const core = this.core;
    const job = this.#model(deadline.job as CoreJob);
    const attempt = job.attempt;
    if (attempt === undefined || attempt.deadlineAt === undefined) {
      this.fail(`a deadline fired for job #${job.n}, which has no armed deadline in the model (state ${job.state})`);
    }
    this.eq(deadline.at, attempt.deadlineAt, `deadline of job #${job.n}`);
    if (deadline.at > this.now) this.fail(`deadline of job #${job.n} at ${deadline.at} fired at ${this.now}`);
    const earliest = this.#earliestDeadline();
    if (deadline.at > earliest) this.fail(`deadline ${deadline.at} expired before the earlier ${earliest}`);
    const needs = job.state === 'running' && attempt.timedOutRetry === undefined;
    this.eq(core.needsVerdict(deadline.job), needs, `needsVerdict of timed-out job #${job.n}`);
    const delay = needs ? this.#verdict(job) : -1;
    this.note(`timeout job #${job.n} attempt ${attempt.n} (verdict ${round(delay)})`);
    core.timeOut(deadline, new TimeoutError(deadline.ms, deadline.job.id), delay, Date.now());
    attempt.deadlineAt = undefined;
    const expected: Expected[] = [[Note.TimedOut, job]];
    if (delay >= 0) attempt.timedOutRetry = delay;
    else expected.push(this.#failForGood(job));
    this.expect(expected, 'timeOut');
    this.#userCode(); // the signal's abort listeners, a `failed` listener
  }

  #promote(now: number): void {
    const due: MJob[] = [];
    for (const job of this.#live) if (job.state === 'delayed' && job.due <= now) due.push(job);
    // A promotion that starts (none in progress) gives the starts a batch to order too.
    if (!this.core.promotionContinues) this.#orderBudget = this.#batch;
    this.core.promote(now);
    // Moved into the due order or not (a promotion in progress), every one of them is due now.
    for (const job of due) {
      if (!isDue(job.rec)) this.fail(`job #${job.n} (due ${job.due}) is not due after promote(${now})`);
      job.state = 'waiting';
    }
    this.expect([], 'promote');
  }

  /** One `core.next`, checked: whether it may start, from which source, which job. */
  #next(now: number): CoreJob | undefined {
    const core = this.core;
    const listed = this.#listed();
    const eligible = listed.filter((source) => source.eligible(this.now));
    const mayStart = this.#phase === 'started' && this.#inFlight.size < core.concurrency;
    // A burst still moving into a source that could give a job and needs every due job first:
    // the start waits (no strategy call) when more of it is held than what is left of the turn's
    // batch, which the start first moves.
    const held = mayStart ? this.#heldBacklog(listed) : 0;
    const waits = held > this.#orderBudget;
    if (mayStart) this.#orderBudget -= Math.min(held, this.#orderBudget);
    const picks = mayStart && !waits && eligible.length > 0 && listed.length >= 2;
    const faulty = picks && this.picker.armed;
    let expectedSource: MSource | undefined;
    if (picks) {
      if (this.#rrUnasked !== undefined) {
        this.#rrLast = this.#rrUnasked;
        this.#rrUnasked = undefined;
      }
      if (!faulty) expectedSource = this.#referencePick(listed, eligible);
    }
    const callsBefore = this.picker.calls;
    let record: CoreJob | undefined;
    try {
      record = core.next(now) as CoreJob | undefined;
    } catch (error) {
      if (faulty && this.picker.fired && error instanceof InvariantError) {
        this.picker.fired = false;
        this.note(`halt: ${error.message}`);
        core.halt(error); // what the shell's pass does
        this.#phase = 'halted';
        this.expect([[Note.Halted, undefined]], 'halt');
        return undefined;
      }
      this.fail(`core.next threw ${String(error)}`);
    }
    // SPEC 4: with two or more sources, the strategy is called once per start, never when none is eligible.
    this.eq(this.picker.calls - callsBefore, picks ? 1 : 0, 'strategy calls in one next()');
    if (waits !== core.startsWaitForOrder && mayStart) {
      this.fail(
        `next() ${waits ? 'did not wait' : 'waited'} for a burst to move, with ${this.#heldBacklog(listed)} due jobs held where a start needs them`,
      );
    }
    if (record === undefined) {
      if (mayStart && eligible.length > 0 && !waits) {
        const names = eligible.map((s) => s.name).join(', ');
        this.fail(`next() started nothing with ${this.#inFlight.size}/${core.concurrency} slots in use and ${names} eligible`);
      }
      this.expect([], 'next (nothing)');
      return undefined;
    }
    const job = this.#model(record);
    const source = job.src;
    if (this.#phase !== 'started') this.fail(`job #${job.n} started while the worker is ${this.#phase}`);
    if (this.#inFlight.size >= core.concurrency) {
      this.fail(`job #${job.n} started with ${this.#inFlight.size} slots in use at concurrency ${core.concurrency}`);
    }
    if (source.running >= source.maxRunning) {
      this.fail(`job #${job.n} started with ${source.running} of ${source.name}'s jobs running at its concurrency ${source.maxRunning}`);
    }
    if (!source.rateAllows(this.now)) this.fail(`job #${job.n} started past ${source.name}'s rate limit`);
    if (!eligible.includes(source)) this.fail(`job #${job.n} started from ${source.name}, which is not eligible`);
    if (job.state !== 'waiting' || job.attempt !== undefined) {
      this.fail(`job #${job.n} started while ${job.state}${job.attempt !== undefined ? ' with an attempt in flight' : ''}`);
    }
    if (expectedSource !== undefined && expectedSource !== source) {
      this.fail(`${this.cfg.strategy} should have picked ${expectedSource.name}, the core started from ${source.name}`);
    }
    if (listed.length === 1) this.#rrUnasked = source;
    const key = job.rec.key;
    if (source.keys !== undefined) {
      // Per-key caps are never exceeded (SPEC 10).
      const k = key as string;
      if (source.pausedKeys.has(k)) this.fail(`job #${job.n} of paused key ${k} of ${source.name} started`);
      const running = source.keyRunning.get(k) ?? 0;
      if (running >= source.keys.concurrency)
        this.fail(`job #${job.n} started with ${running} of key ${k} running at keys.concurrency ${source.keys.concurrency}`);
      if (!source.keyRateAllows(k, this.now)) this.fail(`job #${job.n} started past key ${k}'s rate limit`);
      source.keyRunning.set(k, running + 1);
      const starts = source.keyStarts.get(k) ?? [];
      starts.push(this.now);
      if (starts.length > 4) starts.shift();
      source.keyStarts.set(k, starts);
    }
    // Within a source (within a key, in a keyed queue): priority number (priority queues), then
    // due time, then add order.
    for (const other of source.jobs) {
      if (other.state === 'waiting' && other !== job && other.rec.key === key && this.#dueBefore(other, job)) {
        this.fail(`job #${job.n} of ${source.name} started before job #${other.n}, which is due first`);
      }
    }
    this.eq(record.attempts, job.attempts + 1, `attempt number of job #${job.n}`);
    job.attempts++;
    job.state = 'running';
    source.jobs.delete(job);
    source.running++;
    source.starts.push(this.now);
    const timeout = job.ownTimeout ?? this.cfg.timeout;
    const attempt: MAttempt = {
      job,
      n: job.attempts,
      settleAt: this.now,
      ok: true,
      sync: false,
      deadlineAt: timeout === undefined ? undefined : this.now + timeout,
      timedOutRetry: undefined,
    };
    this.#checkStartTime(job, now);
    this.eq(record.ext?.deadline?.at, attempt.deadlineAt, `deadline of job #${job.n}'s attempt`);
    job.attempt = attempt;
    this.#inFlight.add(attempt);
    this.#starts++;
    this.expect([[Note.Started, job]], 'next');
    return record;
  }

  /**
   * A start's deadline and rate windows (its source's, its key's) begin at a reading taken after
   * the last user code that returned before it (issue 33): never in the past.
   */
  #checkStartTime(job: MJob, now: number): void {
    const returned = this.#userCodeReturned;
    const record = job.rec;
    const deadline = record.ext?.deadline;
    const began: [string, number][] = [];
    if (deadline !== undefined) began.push(['its deadline', deadline.at - deadline.ms]);
    const rate = job.src.lane.rate;
    if (rate !== undefined) began.push([`${job.src.name}'s rate window`, rate.latest]);
    const keyRate = (record as KeyedJob).keyState as { rate?: RateWindow } | undefined;
    if (keyRate?.rate !== undefined) began.push([`key ${String(record.key)}'s rate window`, keyRate.rate.latest]);
    for (const [what, at] of began) {
      if (at < returned) {
        this.fail(`job #${job.n} started with ${what} from ${at} (the pass's reading ${now}), before user code returned at ${returned}`);
      }
    }
  }

  /**
   * Due order within a source (SPEC 5): priority number (priority queues), due time, add order.
   * A job admitted without the time (UNTIMED: due on add into a source holding no timed job)
   * counts as due before every timed job, as `UNTIMED` documents: it makes a difference only
   * when a retry comes due at the very instant of its add (a tie that only a virtual clock makes).
   */
  #dueBefore(a: MJob, b: MJob): boolean {
    if (a.src.kind === 'pq' && a.priority !== b.priority) return a.priority < b.priority;
    const da = a.untimed ? -Infinity : a.due;
    const db = b.untimed ? -Infinity : b.due;
    return da < db || (da === db && a.rec.seq < b.rec.seq);
  }

  /** What the strategy must pick (SPEC 4), from the model's own state. */
  #referencePick(listed: MSource[], eligible: MSource[]): MSource | undefined {
    switch (this.cfg.strategy) {
      case 'Priority':
        return eligible[0];
      case 'MaxLen':
      case 'MinLen': {
        const sign = this.cfg.strategy === 'MaxLen' ? 1 : -1;
        let best = eligible[0] as MSource;
        for (const source of eligible) if (sign * source.viewLength() > sign * best.viewLength()) best = source;
        return best;
      }
      case 'RoundRobin': {
        const last = this.#rrLast;
        let start = 0;
        if (last !== undefined) {
          const at = listed.indexOf(last);
          if (at >= 0) start = at + 1;
          else {
            start = listed.findIndex((source) => listBefore(last, source));
            if (start < 0) start = 0;
          }
        }
        for (let k = 0; k < listed.length; k++) {
          const source = listed[(start + k) % listed.length] as MSource;
          if (eligible.includes(source)) {
            this.#rrLast = source;
            return source;
          }
        }
        return undefined;
      }
      case 'Weighted': {
        let total = 0;
        let best: MSource | undefined;
        let bestCredit = -Infinity;
        for (const source of eligible) {
          const weight = source.options.weight ?? 1;
          const credit = (this.#credits.get(source) ?? 0) + weight;
          this.#credits.set(source, credit);
          total += weight;
          if (credit > bestCredit) {
            best = source;
            bestCredit = credit;
          }
        }
        if (best !== undefined) this.#credits.set(best, bestCredit - total);
        return best;
      }
    }
  }

  /** `Worker#run`: the modelled handler decides what this attempt does. */
  #run(record: CoreJob): void {
    const job = this.#model(record);
    const attempt = job.attempt as MAttempt;
    const rng = this.rng;
    // A timed job's first attempt takes its add time from its lane's record, for its wait (the shell's stats).
    if (record.attempts === 1 && isTimed(record)) this.core.takeAddTime(record);
    const timeout = attempt.deadlineAt === undefined ? undefined : attempt.deadlineAt - this.now;
    attempt.ok = rng.chance(0.6);
    const r = rng.next();
    let how: string;
    if (r < 0.12) {
      attempt.sync = true;
      how = 'sync';
    } else if (r < 0.17 && !this.#final) {
      attempt.settleAt = Infinity;
      how = 'hangs';
    } else if (timeout !== undefined && r < 0.32) {
      attempt.settleAt = this.now + timeout + rng.int(0, 15);
      how = `late, at ${round(attempt.settleAt)}`;
    } else {
      attempt.settleAt = this.now + (rng.chance(0.15) ? 0 : rng.int(1, 30));
      how = `at ${round(attempt.settleAt)}`;
    }
    this.note(`start job #${job.n} of ${job.src.name} attempt ${attempt.n}: ${attempt.ok ? 'ok' : 'fails'} ${how}`);
    this.#userCode(); // the `active` listener, the handler's synchronous part
    if (attempt.sync) this.#finish(attempt);
  }

  /** `Worker#finish`: a modelled handler settled. */
  #finish(attempt: MAttempt): void {
    const core = this.core;
    const job = attempt.job;
    const record = job.rec;
    const source = job.src;
    if (!this.#inFlight.has(attempt)) this.fail(`job #${job.n}'s handler settled twice`);
    const running = job.state === 'running';
    const expected: Expected[] = [];
    this.note(`settle job #${job.n} attempt ${attempt.n} ${attempt.ok ? 'ok' : 'failed'} (model ${job.state})`);
    if (attempt.ok) {
      const completed = core.succeed(record, RESULT, core.finishNeedsTime(record) ? this.now : UNTIMED);
      const succeeds = running && attempt.timedOutRetry === undefined;
      this.eq(completed, succeeds, `succeed() of job #${job.n} says it completed`);
      if (running) {
        if (attempt.timedOutRetry !== undefined) expected.push(this.#retry(job, attempt.timedOutRetry));
        else {
          job.state = 'succeeded';
          expected.push([Note.Succeeded, job]);
        }
      }
      if (completed) {
        this.#completions++;
        if (++job.terminalNotes > 1) this.fail(`job #${job.n} settled a second time (completed)`);
      }
    } else {
      const needs = running && attempt.timedOutRetry === undefined;
      this.eq(core.needsVerdict(record), needs, `needsVerdict of job #${job.n}`);
      const delay = needs ? this.#verdict(job) : -1;
      core.fail(record, HANDLER_ERROR, delay, this.now, Date.now());
      if (running) {
        const retry = attempt.timedOutRetry ?? delay;
        if (retry >= 0) expected.push(this.#retry(job, retry));
        else expected.push(this.#failForGood(job));
      }
    }
    // The slot is free again; a redrive parked behind this handler joins its source.
    this.#inFlight.delete(attempt);
    job.attempt = undefined;
    source.running--;
    if (source.keys !== undefined) source.keyRunning.set(record.key as string, (source.keyRunning.get(record.key as string) ?? 0) - 1);
    const successor = job.successor;
    if (successor !== undefined) {
      job.successor = undefined;
      if (successor.state === 'held') {
        // Due from now on, with the time: its add order is older than that of jobs added while
        // it was held, so add order alone cannot place it.
        successor.untimed = false;
        successor.state = 'waiting';
        successor.due = this.now;
        this.eq(successor.rec.dueAt, this.now, `dueAt of the released redrive #${successor.n}`);
      }
    }
    if (settled(job.state)) this.#live.delete(job);
    this.#leaveIfDrained();
    this.expect(expected, 'finish');
    this.#userCode(); // `completed`, `failed`, `retrying` listeners
    if (this.#passing) return;
    if (core.phase === Phase.Started) this.pass();
  }

  /** `Worker#retryVerdict`, with the hooks' answers drawn at random, checked against the policy. */
  #verdict(job: MJob): number {
    const policy = policyOf(this.cfg.retry, job.rec.ext?.retry as RetryOptions | undefined);
    const attempt = job.rec.attempts;
    const rng = this.rng;
    const allowed = policy !== undefined && attempt < (policy.attempts ?? 1);
    const retry = !allowed || policy.retryIf === undefined || rng.chance(0.7);
    const backoff = policy?.backoff;
    const backoffMs = allowed && retry && typeof backoff === 'function' ? rng.int(0, 40) : undefined;
    const random = rng.next();
    const delay = retryDelay(policy, attempt, false, { retry, backoffMs }, random);
    this.#userCode(); // the retry hooks
    // SPEC 6, independently of the core's arithmetic.
    let expected = -1;
    if (allowed && retry) {
      if (backoff === undefined) expected = 0;
      else if (typeof backoff === 'function') expected = backoffMs as number;
      else {
        expected = backoff.type === 'fixed' ? backoff.delay : backoff.delay * 2 ** (attempt - 1);
        if (backoff.maxDelay !== undefined) expected = Math.min(expected, backoff.maxDelay);
        if (backoff.jitter !== undefined) {
          const low = expected * (1 - backoff.jitter);
          if (delay < low - 1e-9 || delay > expected + 1e-9) this.fail(`jittered backoff ${delay} outside [${low}, ${expected}]`);
          expected = delay;
        }
      }
    }
    if (Math.abs(delay - expected) > 1e-9 || (expected === -1) !== (delay === -1)) {
      this.fail(`retry verdict after attempt ${attempt} of job #${job.n}: expected ${expected}, got ${delay} (${describeRetry(policy)})`);
    }
    return delay;
  }

  #retry(job: MJob, delay: number): Expected {
    if (delay < 0) this.fail('a negative retry delay');
    job.state = 'delayed';
    job.due = this.now + delay;
    job.untimed = false;
    job.src.jobs.add(job);
    return [Note.Retrying, job, delay];
  }

  #failForGood(job: MJob): Expected {
    job.state = 'failed';
    const kept = this.cfg.deadLetterLimit > 0;
    if (kept) {
      this.#dead.push({ job, entry: undefined });
      if (this.#dead.length > this.cfg.deadLetterLimit) this.#dead.shift();
    }
    if (job.attempt === undefined) this.#live.delete(job);
    this.#remember(job);
    return [Note.Failed, job, kept ? 1 : 0];
  }

  #remember(job: MJob): void {
    this.#settledJobs.push(job);
    if (this.#settledJobs.length > 20) this.#settledJobs.shift();
  }

  // ================================================================ jobs in and out (what the shell asks of the core)

  /** Makes a job of `source` (the shell's `newJobRecord`): the core's record, its options in its extras. */
  #newJob(source: MSource, data: unknown, priority: number, spec: JobSpec | undefined, key: string | undefined): MJob {
    const lane = source.lane;
    const record =
      key !== undefined
        ? new SimKeyedJob(lane, data, priority, key)
        : priority !== 0
          ? new SimPriorityJob(lane, data, priority)
          : new CoreJob(lane, data, UNTIMED, State.Due);
    if (spec?.timeout !== undefined || spec?.retry !== undefined) {
      const ext = record.extras();
      ext.timeout = spec.timeout;
      ext.retry = spec.retry;
    }
    this.#created++;
    const job = new MJob(++this.#jobCount, record, source, priority, spec?.timeout);
    this.#jobs.set(record, job);
    return job;
  }

  /**
   * A lane with per-key rate limits is brought to the time before a job joins a key or a key is
   * paused (the shell's `keysToNow`), and a key about to become active is weighed (the shell asks
   * `keys.weight` before the transition and hands the answer over in `pendingWeights`).
   */
  #keysBefore(source: MSource, key: string): void {
    const keys = source.lane.keys as KeyedJobs;
    if (keys.timed) this.core.advanceKeys(source.lane, this.now);
    const weigh = source.options.keyWeight;
    if (weigh !== undefined && !keys.has(key)) keys.pendingWeights = new Map([[key, weigh(key)]]);
  }

  /** A new job joins `source` (the shell's `#add`, its options already checked and its room too). */
  #add(source: MSource, data: unknown, priority: number, spec: JobSpec | undefined): MJob {
    const core = this.core;
    const lane = source.lane;
    const key = source.keys === undefined ? undefined : simKey(data);
    const job = this.#newJob(source, data, priority, spec, key);
    if (spec?.abortedWith !== undefined) {
      this.note(`add job #${job.n} to ${source.name} with an aborted signal`);
      core.cancelAtAdd(job.rec, spec.abortedWith);
      job.state = 'cancelled';
      this.#remember(job);
      this.expect([[Note.Cancelled, job, 0]], 'cancelAtAdd');
      return job;
    }
    const runAt = spec?.delay === undefined ? undefined : this.now + spec.delay;
    // The shell's sampler: a quiet worker times jobs in full, else one in SAMPLE_EVERY.
    const timing = this.rng.chance(0.2) ? Timed.InFull : isSampled(job.rec.seq) ? Timed.Sampled : Timed.No;
    // A delay is counted from a reading of the clock; without one, the shell reads it when
    // admitNeedsTime says so, which it must while a timed job waits in the lane (ordering needs it).
    const timed = runAt !== undefined || lane.timed > 0;
    const needsTime = core.admitNeedsTime(lane, runAt !== undefined && runAt > this.now);
    if (lane.timed > 0 && !needsTime) this.fail(`admitNeedsTime said no for job #${job.n} of ${source.name}, where a timed job waits`);
    const admitNow = runAt !== undefined || needsTime || timing !== Timed.No || this.cfg.alwaysClock ? this.now : UNTIMED;
    if (key !== undefined) this.#keysBefore(source, key);
    if (core.admit(job.rec, runAt, admitNow, timing)) this.#tickNoted = true;
    if (key !== undefined) (lane.keys as KeyedJobs).pendingWeights = undefined;
    if (runAt !== undefined && runAt > this.now) {
      job.state = 'delayed';
      job.due = runAt;
    } else {
      job.state = 'waiting';
      job.due = this.now;
      job.untimed = !timed;
    }
    source.jobs.add(job);
    this.#live.add(job);
    this.eq(job.rec.dueAt, job.untimed ? UNTIMED : job.due, `dueAt of new job #${job.n}`);
    const due = runAt !== undefined ? ` due ${round(runAt)}` : '';
    const timeout = job.ownTimeout !== undefined ? ` timeout ${job.ownTimeout}` : '';
    const retry = job.rec.ext?.retry !== undefined ? ` retry ${describeRetry(job.rec.ext.retry as RetryOptions)}` : '';
    this.note(`add job #${job.n} to ${source.name}${key === undefined ? '' : ` key ${key}`}${due}${timeout}${retry}`);
    this.expect([], 'admit');
    return job;
  }

  /** `Worker#cancel`. */
  #cancel(job: MJob, reason: unknown): boolean {
    const state = job.state;
    const cancels = !settled(state);
    const done = this.core.cancel(job.rec, reason);
    this.note(`cancel job #${job.n} (${state}): ${done}`);
    this.eq(done, cancels, `cancel() of a ${state} job`);
    if (!done) {
      this.expect([], 'cancel (settled)');
      return false;
    }
    if (state === 'running') {
      const attempt = job.attempt as MAttempt;
      attempt.deadlineAt = undefined;
    } else {
      job.src.jobs.delete(job);
      this.#live.delete(job);
    }
    job.state = 'cancelled';
    this.#remember(job);
    this.#leaveIfDrained();
    this.expect([[Note.Cancelled, job, state === 'running' ? 1 : 0]], 'cancel');
    return true;
  }

  /** `Worker#purge`. */
  #purge(model: MSource, key?: string): number {
    const victims = [...model.jobs].filter((job) => key === undefined || job.rec.key === key).sort((a, b) => a.rec.seq - b.rec.seq);
    const purged = this.core.purge(model.lane, key);
    this.note(`purge ${model.name}${key === undefined ? '' : ` key ${key}`}: ${purged}`);
    this.eq(purged, victims.length, `jobs purged from ${model.name}`);
    for (const job of victims) {
      job.state = 'cancelled';
      model.jobs.delete(job);
      this.#live.delete(job);
      this.#remember(job);
    }
    this.#leaveIfDrained();
    this.expect(
      victims.map((job) => [Note.Cancelled, job, 0] as const),
      'purge',
    );
    return purged;
  }

  /** A retiring source leaves the list once nothing of it waits or runs. */
  #leaveIfDrained(): void {
    for (const source of this.sources) {
      if (source.left || !source.retiring || source.jobs.size > 0 || source.running > 0) continue;
      source.left = true;
      this.#listCache = undefined;
      this.#credits.delete(source);
      this.note(`${source.name} leaves the list`);
    }
  }

  // ================================================================ operations

  #opAdd(many: boolean): void {
    if (this.#modelWaiting() > 80) return;
    const rng = this.rng;
    // The shell refuses adds to a retired lane (its own rule): the driver adds only to the others.
    const open = this.#listed().filter((source) => !source.retiring);
    if (open.length === 0) return;
    const source = rng.pick(open);
    const spec = this.#randomJobSpec();
    if (source.kind === 'sub') {
      // A publish delivers one job to every subscription, in one synchronous run.
      this.note(`publish to ${this.#topicSubs.length} subscriptions`);
      const data = rng.int(0, 999);
      for (const sub of this.#topicSubs) this.#add(sub, data, 0, spec);
      return;
    }
    const count = many ? rng.int(1, 5) : 1;
    for (let i = 0; i < count; i++) {
      const data = many ? i : rng.int(0, 999);
      this.#add(source, data, source.kind === 'pq' ? rng.int(0, 3) : 0, spec);
    }
  }

  #randomJobSpec(): JobSpec | undefined {
    const rng = this.rng;
    const spec: JobSpec = {};
    if (rng.chance(0.4)) spec.delay = rng.chance(0.2) ? 0 : rng.int(1, 40);
    if (rng.chance(this.cfg.flavour === 'wide' ? 0.5 : 0.15)) spec.timeout = rng.int(5, 50);
    if (rng.chance(0.2)) spec.retry = this.#randomRetry(false);
    if (rng.chance(0.03)) spec.abortedWith = 'already aborted';
    return Object.keys(spec).length > 0 ? spec : undefined;
  }

  #randomRetry(full: boolean): RetryOptions {
    const rng = this.rng;
    const retry: RetryOptions = {};
    if (full || rng.chance(0.7)) retry.attempts = rng.int(1, 4);
    if (full || rng.chance(0.5)) {
      const kind = rng.int(0, 3);
      if (kind === 1) retry.backoff = backoffStub;
      else if (kind > 1) {
        const schedule: BackoffSchedule = { type: kind === 2 ? 'fixed' : 'exponential', delay: rng.int(0, 15) };
        if (rng.chance(0.4)) schedule.maxDelay = rng.int(0, 30);
        if (rng.chance(0.4)) schedule.jitter = rng.pick([0, 0.5, 1]);
        retry.backoff = schedule;
      }
    }
    if (rng.chance(0.3)) retry.retryIf = retryIfStub;
    return retry;
  }

  #opAdvance(): void {
    const rng = this.rng;
    let target = Math.min(this.core.wakeAt(), this.#nextSettle(), this.now + rng.int(1, 30));
    if (rng.chance(0.2)) target = this.now + rng.int(0, 5);
    if (target > this.now) this.now = target;
    this.note('advance');
    this.#settleDue();
  }

  /** Handlers whose settle time has come settle, in random order (promise reactions). */
  #settleDue(): void {
    const due: MAttempt[] = [];
    for (const attempt of this.#inFlight) if (!attempt.sync && attempt.settleAt <= this.now) due.push(attempt);
    for (const attempt of this.rng.shuffle(due)) if (this.#inFlight.has(attempt)) this.#finish(attempt);
  }

  #nextSettle(): number {
    let at = Infinity;
    for (const attempt of this.#inFlight) if (!attempt.sync) at = Math.min(at, attempt.settleAt);
    return at;
  }

  #opRelease(): void {
    const hung = [...this.#inFlight].filter((attempt) => attempt.settleAt === Infinity);
    if (hung.length === 0) return;
    const attempt = this.rng.pick(hung);
    attempt.settleAt = this.now;
    this.#finish(attempt);
  }

  #opCancel(): void {
    const rng = this.rng;
    const pool = rng.chance(0.85) || this.#settledJobs.length === 0 ? [...this.#live] : this.#settledJobs;
    if (pool.length === 0) return;
    const job = rng.pick(pool);
    this.#cancel(job, rng.chance(0.5) ? undefined : 'changed my mind');
  }

  #opPurge(): void {
    const listed = this.#listed();
    if (listed.length === 0) return;
    const source = this.rng.pick(listed);
    if (source.keys !== undefined && this.rng.chance(0.6)) this.#purge(source, `k${this.rng.int(0, 3)}`);
    else this.#purge(source);
  }

  /** Pauses or resumes a key of a keyed lane (SPEC 10), paused keys before their jobs arrive too. */
  #opPauseKey(): void {
    const keyed = this.#listed().filter((source) => source.keys !== undefined);
    if (keyed.length === 0) return;
    const source = this.rng.pick(keyed);
    const key = `k${this.rng.int(0, 3)}`;
    const lane = source.lane;
    if (source.pausedKeys.has(key) || this.rng.chance(0.3)) {
      this.core.resumeKey(lane, key);
      source.pausedKeys.delete(key);
      this.note(`resume key ${key} of ${source.name}`);
    } else {
      const keys = lane.keys as KeyedJobs;
      if (keys.timed) this.core.advanceKeys(lane, this.now);
      const weight = source.options.keyWeight === undefined || keys.has(key) ? 1 : source.options.keyWeight(key);
      this.core.pauseKey(lane, key, weight);
      source.pausedKeys.add(key);
      this.note(`pause key ${key} of ${source.name}`);
    }
    this.expect([], 'pause/resume key');
  }

  #opConcurrency(): void {
    const n = this.rng.pick([1, 1, 2, 3, 4, 6, Infinity]);
    this.note(`concurrency ${this.core.concurrency} -> ${n}`);
    this.core.concurrency = n;
  }

  /** A subscription is unsubscribed: its lane takes no more jobs and leaves the list once drained. */
  #opRetire(): void {
    const subs = this.#topicSubs;
    if (subs.length === 0) return;
    const source = this.rng.pick(subs);
    subs.splice(subs.indexOf(source), 1);
    this.core.retire(source.lane);
    source.retiring = true;
    this.note(`retire ${source.name}`);
    this.#leaveIfDrained();
    this.expect([], 'retire');
  }

  #opRedrive(): void {
    const core = this.core;
    const entries = core.deadLetters.entries;
    if (entries.length === 0) return;
    const index = this.rng.int(0, entries.length - 1);
    const entry = entries[index] as DeadLetter;
    const origin = core.deadLetters.originOf(entry) as Origin | undefined;
    if (origin === undefined) this.fail('a kept dead letter has no origin');
    const blocker = this.#model(origin.job);
    const model = this.#modelLane(origin.source);
    this.eq(model, blocker.src, `lane of dead job #${blocker.n}`);
    // The shell refuses a redrive into a retired lane (its own rule): the driver leaves it be.
    if (model.retiring) return;
    const ext = origin.job.ext;
    const spec: JobSpec = {};
    if (ext?.timeout !== undefined) spec.timeout = ext.timeout;
    if (ext?.retry !== undefined) spec.retry = ext.retry as RetryOptions;
    this.eq(origin.job.inFlight, blocker.attempt !== undefined, `inFlight of dead job #${blocker.n}`);
    let redriven: MJob;
    if (origin.job.inFlight) {
      const job = this.#newJob(model, entry.data, origin.priority, spec, origin.job.key);
      this.note(`redrive job #${blocker.n} as #${job.n}, held behind its running handler`);
      core.park(job.rec, origin.job, this.now);
      core.timeParked(job.rec, this.rng.chance(0.2) ? Timed.InFull : Timed.No);
      job.state = 'held';
      blocker.successor = job;
      model.jobs.add(job);
      this.#live.add(job);
      this.expect([], 'hold');
      redriven = job;
    } else {
      const job = this.#add(model, entry.data, origin.priority, spec);
      this.note(`redrive job #${blocker.n} as #${job.n}`);
      redriven = job;
    }
    core.redriven(entry, redriven.rec, undefined);
    this.#dead.splice(index, 1);
  }

  #opDuplicateName(): void {
    const listed = this.#listed();
    if (listed.length === 0) return;
    const name = this.rng.pick(listed).name;
    const before = this.core.names.size;
    let threw: unknown;
    try {
      this.core.claimName(name, 'sim', 1, 'sim');
    } catch (error) {
      threw = error;
    }
    if (!(threw instanceof TypeError)) this.fail(`claiming the bound name ${name} again did not throw a TypeError`);
    this.eq(this.core.names.size, before, 'names after a refused claim');
  }

  #bind(): void {
    const rng = this.rng;
    const kind = this.cfg.flavour === 'churn' && rng.chance(0.5) ? 'sub' : rng.pick(['queue', 'queue', 'pq', 'sub'] as const);
    const options: LaneSpec = {};
    if (rng.chance(0.6)) options.priority = rng.int(0, 3);
    if (rng.chance(0.5)) options.weight = rng.int(1, 6);
    if (rng.chance(0.3)) options.concurrency = rng.int(1, 3);
    if (rng.chance(0.25)) options.rateLimit = { limit: rng.int(1, 3), interval: rng.int(5, 40) };
    if (kind !== 'sub' && rng.chance(0.4)) {
      const limits: KeyLimits = { concurrency: Infinity, capacity: Infinity, rateLimit: undefined, weighted: false };
      if (rng.chance(0.5)) limits.concurrency = rng.int(1, 2);
      if (rng.chance(0.3)) limits.rateLimit = { limit: rng.int(1, 2), interval: rng.int(5, 30) };
      if (rng.chance(0.3)) {
        limits.weighted = true;
        options.keyWeight = (key: string) => 1 + (key.charCodeAt(1) % 3);
      }
      options.keys = limits;
    }
    const free = this.sources.filter((source) => source.left && !this.core.names.has(source.name));
    const name = free.length > 0 && rng.chance(0.3) ? rng.pick(free).name : `${kind}-${++this.#sourceCount}`;
    this.core.claimName(name, 'sim', 1, 'sim');
    const order = this.#bindCount++;
    const limits = options.keys;
    const due =
      kind === 'pq'
        ? limits === undefined
          ? new PriorityDueJobs()
          : new KeyedJobs(limits, () => new PriorityDueJobs())
        : limits === undefined
          ? new FifoDueJobs()
          : new KeyedJobs(limits, undefined);
    const lane = new Lane(due, name, order, options);
    this.core.bind(lane);
    const model = new MSource(lane, kind, options, order);
    model.keys = limits;
    this.sources.push(model);
    this.#listCache = undefined;
    this.#byLane.set(lane, model);
    if (kind === 'sub') this.#topicSubs.push(model);
    const shown = { ...options, keyWeight: options.keyWeight === undefined ? undefined : 'weighted' };
    this.note(`bind ${kind} ${name} ${JSON.stringify(shown)}`);
    this.expect([], 'bind');
  }

  /** A lifecycle call, checked against SPEC 2's table (written out here independently). */
  #lifecycle(call: LifecycleCall): void {
    const status = this.#modelStatus();
    this.eq(this.core.status, status, 'status');
    const outcome = LIFECYCLE[call][status];
    let did: boolean | undefined;
    let threw: unknown;
    try {
      did = this.core.call(call);
    } catch (error) {
      threw = error;
    }
    this.note(`${call}() from ${status}: ${threw !== undefined ? 'throws' : did === true ? 'does its work' : 'no-op'}`);
    if (outcome === 'throws') {
      if (!(threw instanceof InvalidStateError)) this.fail(`${call}() from ${status} must throw InvalidStateError, got ${String(threw ?? did)}`);
      this.eq(threw.call, call, 'InvalidStateError.call');
      this.eq(threw.status, status, 'InvalidStateError.status');
      this.expect([], `${call}() refused`);
      return;
    }
    if (threw !== undefined) this.fail(`${call}() from ${status} threw ${String(threw)}`);
    // stop() from stopping does its work in the shell (its promise waits for the running jobs)
    // but changes nothing in the core: the phase is already Stopped.
    this.eq(did, outcome === 'works' && !(call === 'stop' && status === 'stopping'), `${call}() from ${status} changed the phase`);
    if (outcome === 'noop') {
      this.expect([], `${call}() no-op`);
      return;
    }
    this.#phase = call === 'pause' ? 'paused' : call === 'stop' ? 'stopped' : 'started';
    this.eq(this.core.haltError, undefined, `halt error after ${call}()`);
    this.expect(call === 'pause' ? [[Note.Paused, undefined]] : call === 'resume' ? [[Note.Resumed, undefined]] : [], call);
  }

  // ================================================================ the model's views

  #model(record: CoreJob): MJob {
    const job = this.#jobs.get(record);
    if (job === undefined) this.fail(`the core handed over a job the driver never made`);
    return job;
  }

  #modelLane(lane: Lane): MSource {
    const model = this.#byLane.get(lane);
    if (model === undefined) this.fail(`unknown lane ${lane.name}`);
    return model;
  }

  /** A keyed lane's count of active keys, as the shell reads it (`keyCount`): at the time, without advancing. */
  #keyCount(source: MSource): number {
    const keys = source.lane.keys as KeyedJobs;
    return keys.timed ? keys.keyCountAt(this.now) : keys.keyCount;
  }

  /** The list as SPEC 3 orders it (cached until a source binds or leaves; do not change it). */
  /**
   * Due jobs still held with the delayed ones (a promotion in progress) in the sources that need
   * every due job before they give one (priority and keyed queues) and could give one now.
   */
  #heldBacklog(listed: readonly MSource[]): number {
    let held = 0;
    for (const source of listed) {
      const s = source.lane;
      if (!s.due.needsEveryDue || source.running >= source.maxRunning || !source.rateAllows(this.now) || s.delayed.horizon === -Infinity) continue;
      held += s.delayed.countDueBy(s.delayed.horizon);
    }
    return held;
  }

  #listed(): MSource[] {
    return (this.#listCache ??= this.sources.filter((source) => !source.left).sort((a, b) => (listBefore(a, b) ? -1 : 1)));
  }

  #modelWaiting(): number {
    let n = 0;
    for (const source of this.sources) n += source.jobs.size;
    return n;
  }

  #modelStatus(): WorkerStatus {
    const running = this.#inFlight.size > 0;
    switch (this.#phase) {
      case 'initiated':
        return 'initiated';
      case 'started':
        return running || this.#modelWaiting() > 0 ? 'running' : 'idle';
      case 'paused':
        return running ? 'pausing' : 'paused';
      case 'stopped':
        return running ? 'stopping' : 'stopped';
      case 'halted':
        return 'halted';
    }
  }

  #earliestDeadline(): number {
    let at = Infinity;
    for (const attempt of this.#inFlight) if (attempt.deadlineAt !== undefined) at = Math.min(at, attempt.deadlineAt);
    return at;
  }

  // ================================================================ checks

  /**
   * Reads change nothing (SPEC 12): the core's whole state is fingerprinted, every read the shell,
   * the stats and the strategies make is made, a group at a time, and the state must be identical
   * after each group.
   */
  checkReads(where: string): void {
    this.readChecks++;
    const core = this.core;
    const lanes = this.sources.map((source) => source.lane);
    const jobs: CoreJob[] = [];
    for (const job of this.#live) jobs.push(job.rec);
    for (const job of this.#settledJobs) jobs.push(job.rec);
    const before = stateFingerprint(core, lanes, jobs);
    const pathsNow = (): string[] => {
      const paths: string[] = [];
      stateFingerprint(core, lanes, jobs, paths);
      return paths;
    };
    for (const [what, read] of READS) {
      read(core, lanes, jobs, this.now);
      const change = firstDifference(before, stateFingerprint(core, lanes, jobs), pathsNow);
      if (change !== undefined) this.fail(`reads changed the core's state (${where}): ${what}: ${change}`);
    }
  }

  /** Drains the outbox and compares it with what the model expects of the last transition. */
  expect(expected: readonly Expected[], what: string): void {
    const outbox = this.core.outbox;
    const seen: [Note, MJob | undefined, number, boolean][] = [];
    let same = true;
    for (let note = outbox.next(); note !== -1; note = outbox.next()) {
      if (note === Note.Shrunk) continue; // no onSizeLessThan waiters here
      const record = note === Note.Paused || note === Note.Resumed || note === Note.Halted ? undefined : (outbox.job as CoreJob);
      const job = record === undefined ? undefined : this.#jobs.get(record);
      const n = note === Note.Retrying || note === Note.Failed || note === Note.Cancelled ? outbox.n : 0;
      this.#tally[note] = (this.#tally[note] as number) + 1;
      if (note === Note.Failed && n === 1) this.#deadNotes++;
      if (job !== undefined && (note === Note.Failed || note === Note.Cancelled)) {
        if (++job.terminalNotes > 1) this.fail(`job #${job.n} settled a second time (${NOTE_NAMES[note]})`);
      }
      const want = expected[seen.length];
      const foreign = record !== undefined && job === undefined;
      if (want === undefined || want[0] !== note || want[1] !== job || (want[2] ?? 0) !== n || foreign) same = false;
      seen.push([note, job, n, foreign]);
    }
    if (same && seen.length === expected.length) return;
    const wanted = expected.map(([note, job, n]) => describeNote(note, job, n ?? 0, false));
    const got = seen.map(([note, job, n, foreign]) => describeNote(note, job, n, foreign));
    this.fail(`notes of ${what}: expected [${wanted.join(', ')}], got [${got.join(', ')}]`);
  }

  /** Every invariant, after an operation and (`afterPass`) after a decision pass. */
  check(afterPass: boolean): void {
    const core = this.core;
    const c = core.counters;
    const t = this.#tally;
    this.eq(c.added, this.#created, 'counters.added');
    this.eq(c.started, this.#starts, 'counters.started vs starts');
    this.eq(c.succeeded, this.#completions, 'counters.succeeded vs completions');
    this.eq(c.failed, t[Note.Failed], 'counters.failed vs failed notes');
    this.eq(c.retried, t[Note.Retrying], 'counters.retried vs retrying notes');
    this.eq(c.cancelled, t[Note.Cancelled], 'counters.cancelled vs cancelled notes');
    this.eq(c.dead, this.#deadNotes, 'counters.dead vs kept failures');

    // Slots: what runs in the core is what the model's handlers have not settled.
    this.eq(core.slotsInUse, this.#inFlight.size, 'core.slotsInUse vs handlers not settled');
    if (core.slotsInUse < 0) this.fail('slots in use went negative');

    // Waiting jobs, source by source.
    let waiting = 0;
    let delayed = 0;
    /** The earliest due time of a delayed job, and whether a due job waits, over the list. */
    let earliestDue = Infinity;
    /**
     * The same, left out the sources that still hold due jobs in their delayed heap (a FIFO
     * source takes them one at each start): their next delayed job matters only once those have
     * started, and the start that takes the last of them re-arms.
     */
    let earliestUnbacklogged = Infinity;
    let ownTimeouts = 0;
    const hasDue = new Set<MSource>();
    for (const source of this.sources) {
      const s = source.lane;
      let due = 0;
      let late = 0;
      let held = 0;
      let timed = 0;
      for (const job of source.jobs) {
        if (job.state === 'waiting') due++;
        else if (job.state === 'delayed') {
          late++;
          if (job.due < earliestDue) earliestDue = job.due;
          if (job.due < earliestUnbacklogged && !s.delayed.backlogged) earliestUnbacklogged = job.due;
        } else held++;
        if (job.state !== 'held') {
          if (!job.untimed) timed++;
          if (job.ownTimeout !== undefined) ownTimeouts++;
        }
      }
      if (due > 0) hasDue.add(source);
      // Due jobs of a promotion in progress are still held by the delayed heap.
      const unmoved = s.delayed.horizon === -Infinity ? 0 : s.delayed.countDueBy(s.delayed.horizon);
      if (
        s.due.length + unmoved !== due ||
        s.delayed.length - unmoved !== late ||
        (s.parked?.size ?? 0) !== held ||
        s.length !== source.jobs.size ||
        s.running !== source.running ||
        s.timed !== timed ||
        s.retiring !== source.retiring
      ) {
        const core =
          `due ${s.due.length} + ${unmoved} not moved, delayed ${s.delayed.length}, held ${s.parked?.size ?? 0}, length ${s.length}, ` +
          `running ${s.running}, timed ${s.timed}, retiring ${s.retiring}`;
        const model =
          `due ${due}, delayed ${late}, held ${held}, length ${source.jobs.size}, ` +
          `running ${source.running}, timed ${timed}, retiring ${source.retiring}`;
        this.fail(`${source.name} disagrees with the model: core has ${core}; the model ${model}`);
      }
      if (s.running < 0) this.fail(`${source.name}: running went negative`);
      if (source.keys !== undefined) this.#checkKeys(source);
      waiting += s.length;
      delayed += s.delayed.length;
    }
    this.eq(core.queued, waiting, 'core.queued vs the sum of source lengths');
    this.eq(core.delayed, delayed, 'core.delayed vs the sum of delayed jobs');

    // The list (SPEC 3) and the names.
    const listed = this.#listed();
    this.eq(core.list.length, listed.length, 'list length');
    for (let i = 0; i < listed.length; i++) {
      const source = listed[i] as MSource;
      if (core.list[i] !== source.lane) this.fail(`list[${i}] is ${core.list[i]?.name}, expected ${source.name}`);
      if (source.lane.index !== i) this.fail(`${source.name}: index ${source.lane.index}, expected ${i}`);
      if (!core.names.has(source.name)) this.fail(`the name of ${source.name} is not claimed`);
    }
    for (const source of this.sources) {
      if (source.left && source.lane.index !== -1) this.fail(`${source.name} left the list but has index ${source.lane.index}`);
    }
    this.eq(core.names.size, listed.length, 'claimed names vs listed sources');

    // The eligible set the dispatcher keeps as sources change (issue 13) is what a recomputation
    // from scratch finds: every source's eligibility at this time, in list order.
    const kept = core.dispatcher.eligibleAt(this.now);
    let at = 0;
    let same = true;
    for (const source of core.list) if (source.isEligible(this.now)) same &&= kept[at++] === source;
    if (!same || at !== kept.length) {
      const fresh = core.list.filter((source) => source.isEligible(this.now)).map((source) => source.name);
      this.fail(`the eligible set holds [${kept.map((source) => source.name).join(', ')}], a recomputation finds [${fresh.join(', ')}]`);
    }

    // The worker's state.
    this.eq(core.status, this.#modelStatus(), 'status');
    this.eq(core.haltError !== undefined, this.#phase === 'halted', 'haltError set iff halted');

    // Jobs (after the pass only: a wrong state persists, and this loop is the costliest).
    if (afterPass) {
      for (const job of this.#live) {
        const record = job.rec;
        if (
          (isDue(record) ? State.Due : record.state) !== stateOf(job.state) ||
          record.inFlight !== (job.attempt !== undefined) ||
          record.attempts !== job.attempts
        ) {
          this.fail(
            `job #${job.n}: core has state ${STATUS[record.state]} (${record.state}), inFlight ${record.inFlight}, attempts ${record.attempts}; ` +
              `the model ${job.state}, inFlight ${job.attempt !== undefined}, attempts ${job.attempts}`,
          );
        }
      }
    }

    // Dead letters: the failures kept, oldest first, bounded.
    const entries = core.deadLetters.entries;
    this.eq(entries.length, this.#dead.length, 'dead letters kept');
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as DeadLetter;
      const kept = this.#dead[i] as { job: MJob; entry: DeadLetter | undefined };
      if (kept.entry === entry) continue;
      if (kept.entry !== undefined) this.fail(`dead letter ${i} changed`);
      kept.entry = entry;
      const job = kept.job;
      if (
        entry.id !== job.rec.id ||
        entry.data !== job.rec.data ||
        entry.attempts !== job.attempts ||
        entry.source !== job.src.name ||
        entry.key !== job.rec.key
      ) {
        this.fail(`dead letter ${i} is not job #${job.n}'s (attempts ${entry.attempts}, source ${entry.source})`);
      }
    }

    // Time: the next deadline is armed for whatever waits on time.
    const earliestDeadline = this.#earliestDeadline();
    let armed = 0;
    for (const attempt of this.#inFlight) if (attempt.deadlineAt !== undefined) armed++;
    this.eq(core.deadlines.length, armed, 'deadlines armed');
    this.eq(core.deadlines.nextAt(), earliestDeadline, 'earliest deadline');
    if (!core.needsClock) {
      const why: string[] = [];
      if (armed > 0) why.push(`${armed} deadlines`);
      if (delayed > 0) why.push(`${delayed} delayed jobs`);
      if (this.cfg.timeout !== undefined) why.push('a worker timeout');
      for (const source of listed) if (source.options.rateLimit !== undefined) why.push(`${source.name}'s rate limit`);
      if (ownTimeouts > 0) why.push(`${ownTimeouts} waiting jobs with a timeout of their own`);
      if (why.length > 0) this.fail(`needsClock is false while decisions depend on the time: ${why.join(', ')}`);
    }
    const wake = core.wakeAt();
    if (wake > earliestDeadline) this.fail(`wakeAt ${wake} is after the earliest deadline ${earliestDeadline}`);
    const started = this.#phase === 'started';
    const free = core.slotsInUse < core.concurrency;
    // While a promotion moves batches (a priority or keyed queue's due jobs), the shell's
    // continuation (a turn later, at the same time; see pass()) is what wakes the worker, and the
    // pass after it arms the timer again.
    const continuation = core.promotionContinues;
    if (started && free && !continuation) {
      if (wake > earliestUnbacklogged) this.fail(`wakeAt ${wake} is after the earliest due time of a delayed job, ${earliestUnbacklogged}`);
      for (const source of listed) {
        // A keyed queue can give a job only through a key that may run.
        const mayGive = source.keys === undefined ? hasDue.has(source) : source.hasEligibleKey(this.now);
        if (source.running < source.maxRunning && mayGive && !source.rateAllows(this.now) && wake > source.openAt()) {
          this.fail(`wakeAt ${wake} is after ${source.name}'s rate window opens at ${source.openAt()}`);
        }
        // A key waiting only for its rate window wakes the worker when it opens (SPEC 10).
        if (source.keys?.rateLimit !== undefined && source.running < source.maxRunning && afterPass) {
          for (const key of source.activeKeys()) {
            if (source.keyWants(key) && !source.keyRateAllows(key, this.now) && wake > source.keyOpenAt(key)) {
              this.fail(`wakeAt ${wake} is after key ${key} of ${source.name} may start again at ${source.keyOpenAt(key)}`);
            }
          }
        }
      }
    }
    if (!afterPass) return;
    // Deadlines are timed out at the pass's first reading: one that user code let pass after it
    // is the timer's, which the shell arms for a time already past (it fires at once).
    if (core.deadlines.nextAt() <= this.#passRead)
      this.fail(`a deadline at ${core.deadlines.nextAt()} is still armed after a pass that read ${this.#passRead}`);
    if (!started) return;
    if (earliestDue <= this.now) this.fail(`a job due at ${earliestDue} is still delayed after a pass at ${this.now}`);
    if (free && core.startsWaitForOrder) {
      // The starts wait for a burst to move (the continuation moves it): something must be held.
      if (this.#heldBacklog(listed) === 0) this.fail('starts wait for a burst to move after a pass, but no source holds one');
    } else if (free) {
      // Work-conserving (SPEC 3): a free slot and an eligible source never coexist after a pass.
      for (const source of listed) {
        if (source.lane.isEligible(this.now) || (hasDue.has(source) && source.eligible(this.now))) {
          this.fail(`${source.name} is eligible with ${core.slotsInUse}/${core.concurrency} slots in use after a pass`);
        }
      }
    }
    if (wake <= this.now && !continuation && !(this.cfg.slowUserCode && wake === core.deadlines.nextAt()))
      this.fail(`wakeAt ${wake} is not after now (${this.now}) after a pass: the shell would re-arm at once, forever`);
  }

  /**
   * A keyed queue's keys against the model: each active key's figures, and its memory: a key
   * with nothing waiting or running, not paused, is forgotten (at once without a rate limit;
   * with one, once its starts leave the window, which {@link #finalDrain} checks).
   */
  #checkKeys(source: MSource): void {
    const lane = source.lane;
    const keys = lane.keys as KeyedJobs;
    const active = source.activeKeys();
    // One pass over the lane's jobs: per key, due, delayed and held (see below).
    const counts = new Map<string, { due: number; late: number; held: number }>();
    for (const job of source.jobs) {
      const key = job.rec.key as string;
      let count = counts.get(key);
      if (count === undefined) counts.set(key, (count = { due: 0, late: 0, held: 0 }));
      // Due (SPEC 3): waiting, a delayed job whose time has come (moved or not), and a redrive
      // parked behind its predecessor's handler (it joins as soon as that returns), which waits
      // in the lane rather than in its key (`keyStats` adds the lane's count of them).
      if (job.state === 'waiting') count.due++;
      else if (job.state === 'held') count.held++;
      else if (job.state === 'delayed') {
        if (job.due <= this.now) count.due++;
        else count.late++;
      }
    }
    for (const key of active) {
      const stats = keys.stats(key, this.now);
      const { due, late, held } = counts.get(key) ?? { due: 0, late: 0, held: 0 };
      const running = source.keyRunning.get(key) ?? 0;
      const paused = source.pausedKeys.has(key);
      if (stats.waiting !== due + late || stats.due !== due || stats.delayed !== late || stats.running !== running || stats.paused !== paused) {
        const expected = { waiting: due + late, due, delayed: late, running, paused };
        this.fail(`key ${key} of ${source.name}: keyStats ${JSON.stringify(stats)}, the model ${JSON.stringify(expected)}`);
      }
      this.eq(lane.parkedOfKey(key), held, `redrives of key ${key} of ${source.name} parked behind their predecessor`);
    }
    const count = this.#keyCount(source);
    if (count < active.size) this.fail(`${source.name} counts ${count} keys, but ${active.size} are active`);
    if (source.keys?.rateLimit === undefined && count !== active.size) {
      this.fail(`${source.name} remembers ${count} keys, but only ${active.size} are active: forgotten keys hold memory`);
    }
  }

  eq<T>(actual: T, expected: T, what: string): void {
    if (actual !== expected && !(Number.isNaN(actual) && Number.isNaN(expected))) {
      this.fail(`${what}: expected ${String(expected)}, got ${String(actual)}`);
    }
  }

  fail(message: string): never {
    // The runner turns stack traces off for speed (the core makes errors: timeouts, cancellations).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 20;
    const failure = new SimFailure(message);
    Error.stackTraceLimit = limit;
    throw failure;
  }
}

/** SPEC 2's lifecycle table. */
const LIFECYCLE: Record<LifecycleCall, Record<WorkerStatus, 'works' | 'noop' | 'throws'>> = {
  start: {
    initiated: 'works',
    stopped: 'works',
    halted: 'works',
    idle: 'noop',
    running: 'noop',
    pausing: 'throws',
    paused: 'throws',
    stopping: 'throws',
  },
  pause: {
    idle: 'works',
    running: 'works',
    pausing: 'noop',
    paused: 'noop',
    initiated: 'throws',
    stopping: 'throws',
    stopped: 'throws',
    halted: 'throws',
  },
  resume: {
    pausing: 'works',
    paused: 'works',
    idle: 'noop',
    running: 'noop',
    initiated: 'throws',
    stopping: 'throws',
    stopped: 'throws',
    halted: 'throws',
  },
  stop: {
    initiated: 'works',
    idle: 'works',
    running: 'works',
    pausing: 'works',
    paused: 'works',
    stopping: 'works',
    halted: 'works',
    stopped: 'noop',
  },
};

function describeNote(note: Note, job: MJob | undefined, n: number, foreign: boolean): string {
  const who = foreign ? '(unknown job)' : job === undefined ? '' : `#${job.n}`;
  const withN = note === Note.Retrying || note === Note.Failed || note === Note.Cancelled;
  return `${NOTE_NAMES[note]}(${who}${withN ? ` ${round(n)}` : ''})`;
}

function describeRetry(retry: RetryOptions | undefined): string {
  if (retry === undefined) return 'none';
  const backoff = retry.backoff;
  const b = backoff === undefined ? '' : typeof backoff === 'function' ? ' backoff=fn' : ` backoff=${JSON.stringify(backoff)}`;
  return `attempts=${retry.attempts ?? '-'}${b}${retry.retryIf !== undefined ? ' retryIf' : ''}`;
}

function round(n: number): string {
  return Number.isFinite(n) ? String(Math.round(n * 1000) / 1000) : String(n);
}
