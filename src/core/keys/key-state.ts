import type { DueJobs } from '../due/due-jobs.js';
import { KeyFifo } from './key-fifo.js';
import { RateWindow } from '../rate-window.js';
import { keepShape } from '../shape-anchors.js';

/**
 * Where a key waits. Only a `Ready` key is in the turn order; the others wait outside it, so
 * choosing the next key never walks past keys that cannot run.
 *
 * @internal
 */
export enum Place {
  /** Not in any structure: nothing due, paused, or at its `keys.concurrency` (an event brings it back). */
  Idle = 0,
  /** In the turn order: it may give a job now. */
  Ready = 1,
  /** Could run but for its rate window: in the heap of windows, by the time it opens. */
  RateWait = 2,
  /** Nothing waits or runs, but starts are still inside its rate window: forgotten once they leave it. */
  Cooling = 3,
}

/**
 * The rate window of one key of a queue bound with `keys.rateLimit`, and the times the key's
 * place outside the turn order needs: kept off {@link KeyState}, so that a key of a queue without
 * a rate limit does not carry them.
 *
 * @internal
 */
export class KeyRate extends RateWindow {
  /** RateWait: when its window opens. Cooling: when its last start leaves the window. */
  at = 0;
  /** When it last started a job; -1 before its first (a small integer, not a boxed double). */
  lastStartAt = -1;
}

/**
 * One active key of a keyed queue: its due jobs, its counts, its own limits, and its place in
 * the turn order. Made when the key becomes active, dropped when it is forgotten. A queue of
 * 100,000 tenants holds one per active tenant, so it carries only what every key needs: what a
 * rate limit or weights add lives in {@link KeyRate} and {@link WeightedKeyState}.
 *
 * @internal
 */
export class KeyState extends KeyFifo {
  /** `String(key)`. */
  readonly name: string;
  /** What its queue's map of active keys holds it by (`mapKey` of its name): forgetting it needs no parse. */
  readonly heldAs: string | number;
  /**
   * Its due jobs, in the queue's order: itself in a FIFO queue (a key is a {@link KeyFifo}, so
   * one object, not two), a heap by priority in a priority queue.
   */
  readonly jobs: DueJobs;
  /** Its rate window, when `keys.rateLimit` is set. */
  readonly rate: KeyRate | undefined;
  /** Activation order within the queue: the tie-break of the turn order. */
  readonly order: number;
  /** Delayed jobs of this key. */
  delayed = 0;
  /** Jobs of this key in flight. */
  running = 0;
  paused = false;
  /** Set once it is forgotten: a state kept somewhere after that is not the key's any more. */
  forgotten = false;
  place: Place = Place.Idle;
  /** Moves on each time it joins or leaves a heap (rate windows, cooling, a weighted turn heap): see `KeyHeap`. */
  heapToken = 0;
  /** Its place in the turn order with equal weights (activation order, renumbered as keys come and go; see `RoundRobinTurns`). */
  turnAt = -1;

  constructor(name: string, heldAs: string | number, jobs: DueJobs | undefined, rate: KeyRate | undefined, order: number) {
    super();
    this.name = name;
    this.heldAs = heldAs;
    this.jobs = jobs ?? this;
    this.rate = rate;
    this.order = order;
  }
}

/**
 * A key of a queue bound with `keys.weight`: its weight, and its place in the weighted turn
 * order (WF2Q+, see `WeightedTurns`).
 *
 * @internal
 */
export class WeightedKeyState extends KeyState {
  /** `keys.weight(name)` when it became active. */
  readonly weight: number;
  /** Virtual start of its next job. */
  start = 0;
  /** Virtual finish of its next job. */
  finish = 0;
  /** In the heap of keys whose start has come (else the pending one). */
  startReached = false;
  /** The turn order's epoch its start belongs to (see `WeightedTurns`): from an older one, it starts afresh. */
  epoch = 0;

  constructor(name: string, heldAs: string | number, jobs: DueJobs | undefined, rate: KeyRate | undefined, order: number, weight: number) {
    super(name, heldAs, jobs, rate, order);
    this.weight = weight;
  }
}

// Keys are forgotten as they drain, so after a burst none may be left (see `shape-anchors.ts`).
keepShape(new KeyState('', '', undefined, new KeyRate(1, 1), 0));
keepShape(new WeightedKeyState('', '', undefined, undefined, 0, 1));
