import { InvariantError } from '../errors.js';
import { sourceOfView, type Source } from '../source.js';
import type { Picker, SourceView } from '../strategies/strategy.js';

/**
 * Which source gives the next job: the list, eligibility and the strategy, and when time alone
 * could make a source eligible. Part of the core: it owns no timer and never reads the clock,
 * every decision takes `now` from the caller. It changes no job; {@link Core} does.
 *
 * @internal
 */
export class Dispatcher {
  /** Every bound source in list order. */
  readonly list: Source[] = [];
  /** Their views, same order: what the strategy gets. */
  readonly views: SourceView[] = [];
  /** The time of the decision in progress; the views' `eligible` reads it. */
  now = 0;
  /** Bound sources with a rate limit (their own or per key): while any exists, decisions depend on the time. */
  rateLimited = 0;
  /** Bound keyed queues with a per-key rate limit: time passing can let their keys run (see `KeyedJobs.advance`). */
  readonly timedKeys: Source[] = [];
  readonly #picker: Picker;
  readonly #strategyName: string;
  /**
   * The source of the last job started without asking the picker (one source bound), until the
   * picker is next asked and told of it through its optional `served`.
   */
  #servedUnasked: Source | undefined = undefined;

  constructor(picker: Picker, strategyName: string) {
    this.#picker = picker;
    this.#strategyName = strategyName;
  }

  /** Inserts a source at its place: by priority number, unranked last, bind order among equals. */
  bind(source: Source): void {
    const list = this.list;
    let at = list.length;
    const priority = source.priority;
    if (priority !== undefined) {
      at = list.findIndex((other) => other.priority === undefined || other.priority > priority);
      if (at < 0) at = list.length;
    }
    list.splice(at, 0, source);
    this.views.splice(at, 0, source.view);
    this.#reindex(at);
    if (source.rate !== undefined || source.keys?.timed === true) this.rateLimited++;
    if (source.keys?.timed === true) this.timedKeys.push(source);
  }

  /** Takes a source out of the list. */
  unbind(source: Source): void {
    const at = this.list.indexOf(source);
    if (at < 0) return;
    this.list.splice(at, 1);
    this.views.splice(at, 1);
    this.#reindex(at);
    source.index = -1;
    if (source.rate !== undefined || source.keys?.timed === true) this.rateLimited--;
    if (source.keys?.timed === true) this.timedKeys.splice(this.timedKeys.indexOf(source), 1);
    // #servedUnasked stays, even if it is this source: the picker still hears of it (Picker.served
    // says it may have left the list), so that RoundRobin gives the turn to the source after it.
  }

  /**
   * The source that gives the next job at `now`, or `undefined` when none is eligible. With one
   * source bound there is nothing to choose; otherwise the strategy picks (SPEC 4), and what it
   * returns is checked: a broken invariant throws {@link InvariantError}.
   */
  choose(now: number): Source | undefined {
    const list = this.list;
    if (list.length === 1) {
      const only = list[0] as Source;
      if (!only.isEligible(now)) return undefined;
      this.#servedUnasked = only;
      return only;
    }
    let any = false;
    for (let i = 0; i < list.length; i++) {
      if ((list[i] as Source).isEligible(now)) {
        any = true;
        break;
      }
    }
    return any ? this.#pick(now) : undefined;
  }

  /**
   * The earliest time at which time alone could make a source eligible (a delayed job comes due,
   * a rate window opens), or `Infinity`. Sources held back by their own concurrency are not
   * counted: a finishing job wakes the worker for those.
   */
  wakeAt(promoting = false): number {
    let at = Infinity;
    for (const source of this.list) {
      // While a promotion is in progress, a source still holding due jobs in its delayed heap is
      // left out of the delayed term: its earliest is due already, the shell's continuation moves
      // them and the pass after it re-arms (or the shell would re-arm for a time already past).
      if (source.delayed.length > 0 && !(promoting && source.delayed.backlogged)) at = Math.min(at, source.delayed.nextDueAt());
      const keys = source.keys;
      // A keyed queue can give a job only through a key that may run (SPEC 10).
      const hasDue = keys === undefined ? source.due.length > 0 : keys.hasReady;
      if (source.rate !== undefined && hasDue && source.running < source.maxRunning) {
        at = Math.min(at, source.rate.openAt());
      }
      // A key waiting only for its rate window.
      if (keys !== undefined && source.running < source.maxRunning) at = Math.min(at, keys.wakeAt());
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
