import { InvariantError } from '../api/errors.js';
import { laneOfView, type Lane } from './lane.js';
import { BOUND, ENTERED, type FastPicker, fastPickerOf, LEFT, PICK_ELIGIBLE, UNBOUND } from './fast-picker.js';
import type { Picker, SourceView } from '../api/strategy.js';
import { EligibleSet } from './eligible-set.js';
import { RateWaits } from './rate-waits.js';
import { safeString } from '../api/describe.js';

/**
 * Which source gives the next job: the list, eligibility and the strategy, and when time alone
 * could make a source eligible. Part of the core: it owns no timer and never reads the clock,
 * every decision takes `now` from the caller. It changes no job; {@link Core} does.
 *
 * @internal
 */
export class Dispatcher {
  /** Every bound source in list order. */
  readonly list: Lane[] = [];
  /**
   * Their views, same order: what the strategy gets. Frozen, and made anew at each bind and
   * unbind, so that a strategy that sorts or splices the list it was given (plain JavaScript
   * ignores `readonly`) throws instead of reordering the worker's sources for good.
   */
  views: readonly SourceView[] = Object.freeze([]);
  /** The time of the decision in progress; the views' `eligible` reads it. */
  now = 0;
  /** Bound sources with a rate limit (their own or per key): while any exists, decisions depend on the time. */
  rateLimited = 0;
  /** Bound keyed queues with a per-key rate limit: time passing can let their keys run (see `KeyedJobs.advance`). */
  readonly timedKeys: Lane[] = [];
  /**
   * The eligible sources by list position, kept up to date as they change ({@link touch}) and
   * as rate windows open (at each {@link choose}): "is any source eligible" is its size.
   */
  readonly eligible = new EligibleSet();
  /** Sources that would be eligible but for their rate window, by the time it opens. */
  readonly #rateWaits = new RateWaits();
  readonly #picker: Picker;
  /** The picker's fast interface (the built-in strategies), or `undefined` (a custom one gets the views). */
  readonly #fast: FastPicker | undefined;
  /** Slots of sources that left the list, for the next to be bound. */
  readonly #freeOrdinals: number[] = [];
  #ordinals = 0;
  readonly #strategyName: string;
  /**
   * The source of the last job started without asking the picker (one source bound), until the
   * picker is next asked and told of it through its optional `served`.
   */
  #servedUnasked: Lane | undefined = undefined;

  constructor(picker: Picker, strategyName: string) {
    this.#picker = picker;
    this.#fast = fastPickerOf(picker);
    this.#strategyName = strategyName;
  }

  /** Inserts a source at its place: by priority number, unranked last, bind order among equals. */
  bind(source: Lane): void {
    const list = this.list;
    let at = list.length;
    const priority = source.priority;
    if (priority !== undefined) {
      at = list.findIndex((other) => other.priority === undefined || other.priority > priority);
      if (at < 0) at = list.length;
    }
    list.splice(at, 0, source);
    this.views = Object.freeze(list.map((each) => each.view));
    this.#reindex(at);
    if (source.rate !== undefined || source.keys?.timed === true) this.rateLimited++;
    if (source.keys?.timed === true) this.timedKeys.push(source);
    source.ordinal = this.#freeOrdinals.pop() ?? this.#ordinals++;
    this.#fast?.[BOUND]?.(source);
    this.#rebuild();
    this.touch(source);
  }

  /** Takes a source out of the list. */
  unbind(source: Lane): void {
    const at = this.list.indexOf(source);
    if (at < 0) return;
    if (source.inEligible) {
      source.inEligible = false;
      this.#fast?.[LEFT]?.(source);
    }
    source.rateOpensAt = Number.NaN;
    this.list.splice(at, 1);
    this.views = Object.freeze(this.list.map((each) => each.view));
    this.#reindex(at);
    source.index = -1;
    this.#fast?.[UNBOUND]?.(source);
    this.#freeOrdinals.push(source.ordinal);
    source.ordinal = -1;
    if (source.rate !== undefined || source.keys?.timed === true) this.rateLimited--;
    if (source.keys?.timed === true) this.timedKeys.splice(this.timedKeys.indexOf(source), 1);
    this.#rebuild();
    // #servedUnasked stays, even if it is this source: the picker still hears of it (Picker.served
    // says it may have left the list), so that RoundRobin gives the turn to the source after it.
  }

  /**
   * The source that gives the next job at `now`, or `undefined` when none is eligible. With one
   * source bound there is nothing to choose; otherwise the strategy picks (SPEC 4), and what it
   * returns is checked: a broken invariant throws {@link InvariantError}.
   */
  choose(now: number): Lane | undefined {
    this.now = now;
    if (this.#rateWaits.length > 0 && this.#rateWaits.nextAt() <= now) this.#openWindows();
    if (this.eligible.size === 0) return undefined;
    const list = this.list;
    if (list.length === 1) {
      const only = list[0] as Lane;
      this.#servedUnasked = only;
      return only;
    }
    return this.#pick(now);
  }

  /**
   * Brings `source`'s place in {@link eligible} up to date after a change of the source itself
   * (a job joined or left it, one of its jobs started or finished, a key became ready or not):
   * O(1) plus the picker's bookkeeping. A rate window that is closed at the time of the last
   * decision keeps it out until the window opens ({@link choose} lets it in then).
   */
  touch(source: Lane): void {
    const at = source.index;
    if (at < 0) return;
    let eligible =
      source.due.length > 0 && source.running < source.maxRunning && (source.keys === undefined || source.keys.hasReady) && !source.unreachable;
    const rate = source.rate;
    if (eligible && rate !== undefined && !rate.allows(this.now)) {
      eligible = false;
      const opens = rate.openAt();
      if (source.rateOpensAt !== opens) this.#rateWaits.wait(source, opens);
    }
    if (eligible === source.inEligible) return;
    source.inEligible = eligible;
    if (eligible) {
      this.eligible.add(at);
      this.#fast?.[ENTERED]?.(source);
    } else {
      this.eligible.delete(at);
      this.#fast?.[LEFT]?.(source);
    }
  }

  /**
   * The eligible sources at `now` as kept (brought up to date for the time first), in list order:
   * for checks (the simulator compares them with a recomputation from scratch).
   */
  eligibleAt(now: number): Lane[] {
    this.now = now;
    this.#openWindows();
    const kept: Lane[] = [];
    for (let at = this.eligible.first(); at >= 0; at = this.eligible.nextFrom(at + 1)) kept.push(this.list[at] as Lane);
    for (const source of this.list) {
      if (source.inEligible !== this.eligible.has(source.index)) {
        throw new InvariantError('eligible-set', `source "${source.name}" is ${source.inEligible ? '' : 'not '}marked eligible against the set`);
      }
    }
    if (kept.length !== this.eligible.size)
      throw new InvariantError('eligible-set', `the eligible set counts ${this.eligible.size}, holds ${kept.length}`);
    return kept;
  }

  /** Lets in the sources whose rate window has opened by {@link now}. */
  #openWindows(): void {
    // At most the entries there now: one that goes back (a window that rounding keeps shut at
    // the time it said it opens) waits for the next decision.
    const now = this.now;
    for (let n = this.#rateWaits.length; n > 0; n--) {
      const source = this.#rateWaits.popDue(now);
      if (source === undefined) break;
      if (source !== null) this.touch(source);
    }
  }

  #rebuild(): void {
    const list = this.list;
    this.eligible.reset(list.length);
    for (let i = 0; i < list.length; i++) if ((list[i] as Lane).inEligible) this.eligible.add(i);
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

  #pick(now: number): Lane {
    this.now = now;
    let view: SourceView | undefined;
    let source: Lane | undefined;
    try {
      const unasked = this.#servedUnasked;
      if (unasked !== undefined) {
        this.#servedUnasked = undefined;
        this.#picker.served?.(unasked.view);
      }
      const fast = this.#fast;
      if (fast !== undefined) source = fast[PICK_ELIGIBLE](this.eligible, this.list);
      else {
        view = this.#picker.pick(this.views);
        source = laneOfView(view);
      }
    } catch (error) {
      throw new InvariantError('strategy-returns', `strategy "${this.#strategyName}" threw: ${safeString(error)}`, { cause: error });
    }
    // A custom picker's (`view` set) must be the entry itself, not a stand-in for it (an object
    // made from it, a Proxy of it): SPEC 4's "one of the eligible entries" is the object given.
    if (source === undefined || this.list[source.index] !== source || (view !== undefined && this.views[source.index] !== view)) {
      throw new InvariantError(
        'picked-source-in-list',
        `strategy "${this.#strategyName}" returned ${source === undefined && view === undefined ? 'undefined' : 'an entry that is not in the list'}`,
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
    for (let i = from; i < this.list.length; i++) (this.list[i] as Lane).index = i;
  }
}
