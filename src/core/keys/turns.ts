import { EligibleSet } from '../eligible-set.js';
import { KeyHeap } from './key-heap.js';
import { type KeyState, Place, type WeightedKeyState } from './key-state.js';

/**
 * The turn order of a keyed queue: the keys that may give a job now (`Ready`), and whose turn
 * it is. Keys that cannot run are not in it (see `Place`), so choosing costs O(log32 k) with equal
 * weights (at most four word scans up to a million keys) and O(log k) with weights, however many
 * keys wait outside.
 *
 * @internal
 */
export interface Turns {
  /** Keys in the turn order. */
  readonly size: number;
  /** A key became active (before its queue holds it): it takes its place at the end. */
  activated(key: KeyState): void;
  /** A key was forgotten (its queue no longer holds it). */
  forgotten(): void;
  /** A key becomes ready: it is in the turn order, at its place. */
  add(key: KeyState): void;
  /** A ready key can no longer run (paused, nothing due, at its cap) without having been served. */
  remove(key: KeyState): void;
  /** The key whose turn it is; only when `size > 0`. */
  pick(): KeyState;
  /** The picked key gave a job: the turn moves past it (it stays in the order until told otherwise). */
  served(key: KeyState): void;
}

/** Fewest places the equal-weight turn order keeps room for. */
const MIN_PLACES = 64;

/**
 * Equal weights: round-robin among the ready keys in the order the keys became active (SPEC 10).
 * Every active key has a place (`KeyState.turnAt`), ready or not; the ready keys' places are in
 * a set, and the next turn is the first ready place after the place of the key served last, or
 * the first one when none is after it. A new key takes the place after every other (the end of
 * the turn order); a key that cannot run keeps its place and is skipped without spending a
 * turn; a key forgotten and made active again is a new key. A key's turn comes once per pass
 * over the places, so one that had nothing waiting for a while gets no burst.
 *
 * Places grow with every activation: when they run out, the room doubles if active keys still
 * hold most places, else the active keys are numbered again from 0 in activation order (the
 * queue's map of active keys holds them in that order) in room for twice their number; the room
 * shrinks the same way once most keys are forgotten, so memory follows the active keys and each
 * doubling or renumbering is paid for by the activations or forgets before it.
 */
export class RoundRobinTurns implements Turns {
  /** The queue's active keys, in activation order. */
  readonly #active: ReadonlyMap<unknown, KeyState>;
  /** Places of the ready keys. */
  readonly #ready = new EligibleSet();
  /** The ready key at each place. */
  #atPlace: (KeyState | undefined)[] = [];
  /** The place the next key to become active takes. */
  #nextPlace = 0;
  /** The place of the key served last (which may have left since), or -1. */
  #last = -1;

  constructor(active: ReadonlyMap<unknown, KeyState>) {
    this.#active = active;
    this.#renumber();
  }

  get size(): number {
    return this.#ready.size;
  }

  activated(key: KeyState): void {
    if (this.#nextPlace === this.#ready.capacity) this.#makeRoom();
    key.turnAt = this.#nextPlace++;
  }

  forgotten(): void {
    const room = this.#ready.capacity;
    if (room > MIN_PLACES && this.#active.size * 8 < room) this.#renumber();
  }

  add(key: KeyState): void {
    this.#ready.add(key.turnAt);
    this.#atPlace[key.turnAt] = key;
  }

  remove(key: KeyState): void {
    this.#ready.delete(key.turnAt);
    this.#atPlace[key.turnAt] = undefined;
  }

  pick(): KeyState {
    const ready = this.#ready;
    let at = ready.nextFrom(this.#last + 1);
    if (at < 0) at = ready.first();
    return this.#atPlace[at] as KeyState;
  }

  served(key: KeyState): void {
    this.#last = key.turnAt;
  }

  /**
   * The places ran out. When most of them are still held by active keys, the room doubles and
   * every key keeps its place (no walk over the keys, which a queue gaining thousands of new
   * keys would pay at each doubling); when forgotten keys left most of them empty, the keys are
   * numbered again.
   */
  #makeRoom(): void {
    const room = this.#ready.capacity;
    if (this.#active.size * 2 < room) {
      this.#renumber();
      return;
    }
    this.#ready.grow(2 * room);
    const atPlace = new Array<KeyState | undefined>(2 * room);
    const was = this.#atPlace;
    for (let at = 0; at < room; at++) atPlace[at] = was[at];
    this.#atPlace = atPlace;
  }

  /**
   * Numbers the active keys' places again from 0, in room for twice as many: the order of places
   * and where the last-served key stood among them stay as they were.
   */
  #renumber(): void {
    const room = Math.max(MIN_PLACES, 2 * (this.#active.size + 1));
    const ready = this.#ready;
    ready.reset(room);
    const atPlace = new Array<KeyState | undefined>(room);
    const last = this.#last;
    let lastNow = -1;
    let place = 0;
    for (const key of this.#active.values()) {
      if (key.turnAt <= last) lastNow = place;
      key.turnAt = place;
      if (key.place === Place.Ready) {
        ready.add(place);
        atPlace[place] = key;
      }
      place++;
    }
    this.#atPlace = atPlace;
    this.#nextPlace = place;
    this.#last = lastNow;
  }
}

/** Virtual start: the order of the keys waiting for their start (then activation order). */
const startOf = (key: KeyState): number => (key as WeightedKeyState).start;
/** Virtual finish: the order of the keys whose start has come (then activation order). */
const finishOf = (key: KeyState): number => (key as WeightedKeyState).finish;

/**
 * How far the virtual time may run, as time × total ready weight (which grows by one per start),
 * before it is brought back to 0: past 2^32 a double's rounding at that time would begin to blur
 * the finish times of the heaviest keys, and ties would go by activation order (bursts).
 */
const REBASE_AT = 2 ** 32;
/** A total weight that a removal left below this share of what it was is made again from the keys: the subtraction lost it to rounding. */
const CANCELLED_SHARE = 2 ** -30;
/**
 * The most one start moves a virtual time. A key lighter than 2^-900 of the heaviest ready key
 * takes turns as one of that weight: its exact share (one start in more than 2^900) is beyond any
 * run, while an uncapped cost (up to 1 / 5e-324) would overflow the virtual times.
 */
const MAX_COST = 2 ** 900;
/** A virtual time this far brings the times back to 0 whatever the weights (see {@link WeightedTurns}). */
const FAR = 2 ** 960;
/**
 * The scaled total ready weight is kept within [1 / SCALE_SPAN, SCALE_SPAN] (see
 * {@link WeightedTurns}). So wide a span that a key 2^500 times heavier than the rest may come
 * and go without the others being scaled again each time (O(ready keys) each).
 */
const SCALE_SPAN = 2 ** 600;
/** Whether a scaled total is within {@link SCALE_SPAN} (`NaN` and `Infinity` are not). */
const inScale = (total: number): boolean => total >= 1 / SCALE_SPAN && total <= SCALE_SPAN;
/** Scales stay within [2^-SCALE_BITS, 2^SCALE_BITS], so one over another is a finite double. */
const SCALE_BITS = 511;

/**
 * Weights: WF2Q+ (worst-case fair weighted fair queueing, Bennett and Zhang) with every job
 * counted as one unit of work. Each ready key has the virtual start and finish of its next job
 * (finish = start + 1 / weight); the queue's virtual time advances by 1 / (total ready weight)
 * per start. Among the keys whose start has come, the earliest finish goes next. That keeps each
 * key within about one start of its exact share over any run (plain fair queueing by finish
 * alone lets a heavy key take a burst of starts), and costs O(log k): two heaps, one of keys
 * waiting for their start, one of keys whose start has come, ordered by finish.
 *
 * A key that becomes ready starts at max(virtual time, the start of its next job): one that was
 * skipped keeps its place, one that had nothing waiting for a while gets no burst.
 *
 * Weights may be any positive finite numbers, 5e-324 to 1.7e308, so the arithmetic guards four
 * things. Only their ratios matter, so the turn order works with each weight times a power of
 * two (`#scale`, exact). When the ready keys' scaled total leaves a wide span ({@link
 * SCALE_SPAN}), the scale is chosen again so that the heaviest ready key weighs about 1 (within
 * 2^-511 to 2^511 of it at the ends of the range): the virtual times of keys all as light as
 * 1e-306 then stay far from overflowing, and keep their proportions. A cost per start is at most
 * {@link MAX_COST}. The total ready weight is kept by adding and subtracting, with Neumaier's
 * compensation (1 + 1e-17 is 1, so a plain sum would leave 0 once the 1 leaves, while the 1e-17
 * key is still ready); a total that still cancels is redone as a sum, at most once per as many
 * changes as keys are ready. And the virtual time is brought back to 0 once it
 * has run far (see {@link REBASE_AT} and {@link FAR}), or when the scale changes: the ready keys'
 * starts and finishes are lowered (and scaled) with it, and a key outside the turn order
 * meanwhile (paused, at its cap) starts afresh when it comes back, as a key that had nothing
 * waiting does.
 */
export class WeightedTurns implements Turns {
  readonly #pending = new KeyHeap(startOf);
  readonly #reached = new KeyHeap(finishOf);
  #time = 0;
  /**
   * With {@link #carry}, the ready keys' weights, each times {@link #scale} (see {@link #total}):
   * summed with Neumaier's compensation, so that a key far heavier than the rest leaving
   * (1e100 + 2000 - 1e100) leaves the rest's total, not 0.
   */
  #totalWeight = 0;
  /** What the additions to {@link #totalWeight} rounded off. */
  #carry = 0;
  /** Adds and removals since the total was last summed afresh from the keys. */
  #sinceSummed = 0;
  /** What weights are multiplied by: a power of two (see the class's comment). */
  #scale = 1;
  /** Moves on each time the virtual time is brought back to 0. */
  #epoch = 0;
  size = 0;

  /** Activation order is only a tie-break here, kept by the key itself (`KeyState.order`). */
  activated(): void {}

  forgotten(): void {}

  add(state: KeyState): void {
    const key = state as WeightedKeyState; // a queue with weights makes only those
    // A heavy key joining at a far virtual time: bring it back first, or its finish would be
    // rounded. A key that leaves the scale: scale again first.
    const total = this.#total() + key.weight * this.#scale;
    if (this.#time * total >= REBASE_AT || !inScale(total)) this.#rebase(key.weight);
    if (key.epoch !== this.#epoch) {
      key.epoch = this.#epoch;
      key.start = this.#time;
    } else if (key.start < this.#time) key.start = this.#time;
    key.finish = key.start + this.#cost(key.weight);
    this.#addWeight(key.weight * this.#scale);
    this.size++;
    this.#insert(key);
  }

  remove(state: KeyState): void {
    const key = state as WeightedKeyState;
    (key.startReached ? this.#reached : this.#pending).remove(key);
    const before = this.#total();
    this.#addWeight(-key.weight * this.#scale);
    if (--this.size === 0) {
      this.#totalWeight = this.#carry = 0; // no drift left behind
      return;
    }
    // What the compensation could not keep is summed afresh: at once when nothing is left (the
    // keys still ready weigh something), else at most once per as many changes as keys are ready.
    const total = this.#total();
    if (!(total > 0) || (!(total > before * CANCELLED_SHARE) && this.#sinceSummed >= this.size)) this.#sumAfresh();
    if (!inScale(this.#total())) this.#rebase(0); // the far heavier keys left: scale the light ones up
  }

  pick(): KeyState {
    this.#reach();
    if (this.#reached.length === 0) {
      // Every ready key starts later than the virtual time: jump to the earliest.
      this.#time = (this.#pending.peek() as WeightedKeyState).start;
      this.#reach();
    }
    return this.#reached.peek() as KeyState;
  }

  served(state: KeyState): void {
    const key = state as WeightedKeyState;
    this.#reached.remove(key);
    const total = this.#total();
    this.#time += Math.min(1 / total, MAX_COST);
    key.start = key.finish;
    key.finish = key.start + this.#cost(key.weight);
    this.#insert(key);
    if (this.#time * total >= REBASE_AT || this.#time >= FAR) this.#rebase(0);
  }

  /** The ready keys' scaled weights. */
  #total(): number {
    return this.#totalWeight + this.#carry;
  }

  /** Adds `weight` to the total, keeping in `#carry` what the addition rounded off (Neumaier). */
  #addWeight(weight: number): void {
    const sum = this.#totalWeight;
    const next = sum + weight;
    this.#carry += Math.abs(sum) >= Math.abs(weight) ? sum - next + weight : weight - next + sum;
    this.#totalWeight = next;
    this.#sinceSummed++;
  }

  #sumAfresh(): void {
    this.#totalWeight = this.#readyWeight();
    this.#carry = 0;
    this.#sinceSummed = 0;
  }

  /** How far one start of a key of `weight` moves its virtual start (1 / its scaled weight, at most {@link MAX_COST}). */
  #cost(weight: number): number {
    const cost = 1 / (weight * this.#scale);
    return Math.min(cost, MAX_COST);
  }

  /** The ready keys' scaled weights, summed afresh: O(ready keys), only when a subtraction cancelled or the scale changed. */
  #readyWeight(): number {
    let total = 0;
    const scale = this.#scale;
    const add = (key: KeyState): void => {
      total += (key as WeightedKeyState).weight * scale;
    };
    this.#pending.forEach(add);
    this.#reached.forEach(add);
    return total;
  }

  /**
   * Brings the virtual time back to 0, and the ready keys' starts and finishes with it: O(ready
   * keys), once per 2^32 starts or so. When the scaled total of the ready keys and `joining` (the
   * weight of a key about to join, or 0) has left {@link SCALE_SPAN}, which takes weights that
   * move by a factor of 2^500 or more, the weights are also scaled again.
   */
  #rebase(joining: number): void {
    const by = this.#time;
    const epoch = ++this.#epoch;
    const total = this.#total() + joining * this.#scale;
    const scale = inScale(total) ? this.#scale : this.#scaleFor(joining);
    // Virtual times are in units of 1 / (weight × scale): a new scale multiplies them by old / new
    // (a power of two, exact, finite as both are within 2^±511), kept within ±MAX_COST (a key that
    // weighed next to nothing at the old scale), so that no time is ever infinite.
    const factor = this.#scale / scale;
    const to = (value: number): number => {
      const moved = (value - by) * factor;
      return Math.min(Math.max(moved, -MAX_COST), MAX_COST);
    };
    const renumber = (state: KeyState): void => {
      const key = state as WeightedKeyState;
      key.start = to(key.start);
      key.finish = to(key.finish);
      key.epoch = epoch;
    };
    this.#pending.renumberAll(to);
    this.#pending.forEach(renumber);
    this.#reached.renumberAll(to);
    this.#reached.forEach(renumber);
    this.#time = 0;
    this.#scale = scale;
    this.#sumAfresh();
  }

  /** The scale at which the heaviest of the ready keys and `joining` weighs between 1/2 and 1 (within 2^±511 of that at the ends of the range). */
  #scaleFor(joining: number): number {
    let heaviest = joining;
    const weigh = (key: KeyState): void => {
      const weight = (key as WeightedKeyState).weight;
      if (weight > heaviest) heaviest = weight;
    };
    this.#pending.forEach(weigh);
    this.#reached.forEach(weigh);
    if (!(heaviest > 0)) return this.#scale;
    return 2 ** -Math.min(SCALE_BITS, Math.max(-SCALE_BITS, Math.ceil(Math.log2(heaviest))));
  }

  #insert(key: WeightedKeyState): void {
    key.startReached = key.start <= this.#time;
    (key.startReached ? this.#reached : this.#pending).push(key);
  }

  #reach(): void {
    const pending = this.#pending;
    for (
      let top = pending.peek() as WeightedKeyState | undefined;
      top !== undefined && top.start <= this.#time;
      top = pending.peek() as WeightedKeyState | undefined
    ) {
      pending.remove(top);
      top.startReached = true;
      this.#reached.push(top);
    }
  }
}
