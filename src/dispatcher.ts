import { InvariantError } from './errors.js';
import { State, type JobRecord } from './job.js';
import { sourceOfView, type Source } from './source.js';
import type { Picker, SourceView } from './strategies/strategy.js';

/**
 * The deciding half of a worker: the list, eligibility, due times, caps, rate windows and the
 * strategy. It owns no timer and never reads the clock: every decision takes `now` from the
 * caller, so it can be driven on virtual time. The `Worker` shell acts on what it decides.
 *
 * Every invariant of SPEC 8 is checked here, in every build; a broken one throws
 * {@link InvariantError} and the shell halts the worker.
 *
 * @internal
 */
export class Dispatcher {
  /** Every bound source in list order. */
  readonly list: Source[] = [];
  /** Their views, same order: what the strategy gets. */
  readonly views: SourceView[] = [];
  /** The worker's slot count. */
  concurrency: number;
  /** Slots in use. */
  inFlight = 0;
  /** Live waiting jobs over every source, due or delayed. */
  waiting = 0;
  /** Live delayed jobs over every source. */
  delayed = 0;
  /** The time of the decision in progress; the views' `eligible` reads it. */
  now = 0;
  readonly #picker: Picker;
  readonly #strategyName: string;
  #rateLimited = 0;
  /** Whether the shell lets jobs start (its worker is started); set by the shell. */
  open = false;
  /**
   * The source of the last job started without asking the picker (one source bound), until the
   * picker is next asked and told of it through its optional `served`.
   */
  #servedUnasked: Source | undefined = undefined;

  constructor(concurrency: number, picker: Picker, strategyName: string) {
    this.concurrency = concurrency;
    this.#picker = picker;
    this.#strategyName = strategyName;
  }

  /** Whether decisions depend on the time (delayed jobs or rate limits exist). */
  get needsClock(): boolean {
    return this.delayed > 0 || this.#rateLimited > 0;
  }

  /** Inserts a source at its place: by priority number, unranked last, bind order among equals. */
  bind(source: Source): void {
    const list = this.list;
    let at = list.length;
    if (source.priority !== undefined) {
      at = list.findIndex((other) => other.priority === undefined || other.priority > (source.priority as number));
      if (at < 0) at = list.length;
    }
    list.splice(at, 0, source);
    this.views.splice(at, 0, source.view);
    this.#reindex(at);
    if (source.rate !== undefined) this.#rateLimited++;
  }

  /** Takes a source out of the list (a drained, unsubscribed subscription). */
  unbind(source: Source): void {
    const at = this.list.indexOf(source);
    if (at < 0) return;
    this.list.splice(at, 1);
    this.views.splice(at, 1);
    this.#reindex(at);
    source.index = -1;
    if (source.rate !== undefined) this.#rateLimited--;
    source.host.sourceUnbound(source);
  }

  /** Unbinds a retiring source once nothing of it waits or runs. */
  retireIfDrained(source: Source): void {
    if (source.retiring && source.running === 0 && source.length === 0) this.unbind(source);
  }

  /** Moves every delayed job due at `now` into its source's due order. */
  promote(now: number): void {
    if (this.delayed === 0) return;
    for (const source of this.list) if (source.delayed.length > 0) source.promote(now);
  }

  /**
   * Chooses the next job to start at `now`, marks it running and takes a slot, or returns
   * `undefined` when no source is eligible. Call only with a slot free.
   */
  claim(now: number): JobRecord | undefined {
    if (this.inFlight >= this.concurrency) {
      throw new InvariantError(
        'worker-concurrency',
        `a start was attempted with ${this.inFlight} of ${this.concurrency} slots in use`,
      );
    }
    const list = this.list;
    let source: Source | undefined;
    if (list.length === 1) {
      source = list[0] as Source;
      if (!source.isEligible(now)) return undefined;
      this.#servedUnasked = source;
    } else {
      let any = false;
      for (let i = 0; i < list.length; i++) {
        if ((list[i] as Source).isEligible(now)) {
          any = true;
          break;
        }
      }
      if (!any) return undefined;
      source = this.#pick(now);
      // The strategy is user code: it may have paused or stopped the worker, or lowered the
      // concurrency, in which case this start must not happen.
      if (!this.open || this.inFlight >= this.concurrency) return undefined;
    }
    const job = source.take(now);
    if (job.state !== State.Waiting || job.inFlight) {
      throw new InvariantError(
        'attempt-starts-once',
        `job ${job.id} of source "${source.name}" was taken while ${job.status}${job.inFlight ? ' and in flight' : ''}`,
      );
    }
    job.state = State.Running;
    job.inFlight = true;
    job.beginAttempt();
    this.inFlight++;
    return job;
  }

  /** Frees the slot of a job whose handler has settled. */
  release(job: JobRecord): void {
    if (!job.inFlight) {
      throw new InvariantError('slot-released-once', `job ${job.id} released a slot it did not hold`);
    }
    job.inFlight = false;
    const source = job.home as Source;
    source.running--;
    this.inFlight--;
    if (this.inFlight < 0 || source.running < 0) {
      throw new InvariantError(
        'slots-never-negative',
        `slots in use went negative (worker ${this.inFlight}, source "${source.name}" ${source.running})`,
      );
    }
    if (source.retiring) this.retireIfDrained(source);
  }

  /**
   * The earliest time after `now` at which time alone could make a source eligible (a delayed job
   * comes due, a rate window opens), or `Infinity`. Sources held back by their own concurrency
   * are not counted: a finishing job wakes the worker for those.
   */
  wakeAt(): number {
    if (!this.needsClock) return Infinity;
    let at = Infinity;
    for (const source of this.list) {
      if (source.delayed.length > 0) at = Math.min(at, source.delayed.nextDueAt());
      if (source.rate !== undefined && source.due.length > 0 && source.running < source.maxRunning) {
        at = Math.min(at, source.rate.openAt());
      }
    }
    return at;
  }

  #pick(now: number): Source {
    this.now = now;
    let view: SourceView;
    try {
      const unasked = this.#servedUnasked;
      if (unasked !== undefined) {
        this.#servedUnasked = undefined;
        this.#picker.served?.(unasked.view);
      }
      view = this.#picker.pick(this.views);
    } catch (error) {
      throw new InvariantError('strategy-returns', `strategy "${this.#strategyName}" threw: ${String(error)}`, { cause: error });
    }
    const source = sourceOfView(view);
    if (source === undefined || this.list[source.index] !== source) {
      throw new InvariantError(
        'picked-source-in-list',
        `strategy "${this.#strategyName}" returned ${view === undefined ? 'undefined' : 'an entry that is not in the list'}`,
      );
    }
    if (!source.isEligible(now)) {
      throw new InvariantError(
        'picked-source-eligible',
        `strategy "${this.#strategyName}" picked source "${source.name}", which is not eligible ` +
          `(${source.due.length} due, ${source.running}/${source.maxRunning} running)`,
      );
    }
    return source;
  }

  #reindex(from: number): void {
    for (let i = from; i < this.list.length; i++) (this.list[i] as Source).index = i;
  }
}
