import { KeyHeap } from './key-heap.js';
import type { KeyState, WeightedKeyState } from './key-state.js';

/**
 * The turn order of a keyed queue: the keys that may give a job now (`Ready`), and whose turn
 * it is. Keys that cannot run are not in it (see `Place`), so every operation costs O(1) with
 * equal weights and O(log k) with weights, however many keys wait outside.
 *
 * @internal
 */
export interface Turns {
  /** Keys in the turn order. */
  readonly size: number;
  /** A key becomes ready: a new one joins the end, one that was skipped gets its turn back. */
  add(key: KeyState): void;
  /** A ready key can no longer run (paused, nothing due) without having been served. */
  remove(key: KeyState): void;
  /** The key whose turn it is; only when `size > 0`. */
  pick(): KeyState;
  /** The picked key gave a job: charge its turn (it stays in the order until told otherwise). */
  served(key: KeyState): void;
}

/** An intrusive doubly linked list of keys: O(1) append and unlink, no allocation. */
class KeyList {
  head: KeyState | undefined = undefined;
  tail: KeyState | undefined = undefined;
  length = 0;

  push(key: KeyState): void {
    key.prev = this.tail;
    key.next = undefined;
    if (this.tail === undefined) this.head = key;
    else this.tail.next = key;
    this.tail = key;
    this.length++;
  }

  unlink(key: KeyState): void {
    if (key.prev === undefined) this.head = key.next;
    else key.prev.next = key.next;
    if (key.next === undefined) this.tail = key.prev;
    else key.next.prev = key.prev;
    key.prev = undefined;
    key.next = undefined;
    this.length--;
  }
}

/**
 * Equal weights: round-robin in rounds. Every key has one turn per round, in the order the keys
 * became active; served keys move to the next round's list. A key that was skipped (not
 * eligible when its turn came) keeps its turn: when it becomes eligible again within the round
 * it rejoins the current round (after the keys still waiting for their turn in it), so it is
 * served before any key gets a second turn. A new key joins the end of the current round.
 */
export class RoundRobinTurns implements Turns {
  #current = new KeyList();
  #next = new KeyList();
  #round = 0;

  get size(): number {
    return this.#current.length + this.#next.length;
  }

  add(key: KeyState): void {
    if (key.round > this.#round) this.#next.push(key);
    else {
      key.round = this.#round; // a key gone for a long time gets one turn, no burst
      this.#current.push(key);
    }
  }

  remove(key: KeyState): void {
    // A key's round says which list holds it: the current round's, or the next one's.
    (key.round > this.#round ? this.#next : this.#current).unlink(key);
  }

  pick(): KeyState {
    if (this.#current.length === 0) {
      const done = this.#current;
      this.#current = this.#next;
      this.#next = done;
      this.#round++;
    }
    return this.#current.head as KeyState;
  }

  served(key: KeyState): void {
    this.#current.unlink(key);
    key.round = this.#round + 1;
    this.#next.push(key);
  }
}

/** Virtual start: the order of the keys waiting for their start (then activation order). */
const startOf = (key: KeyState): number => (key as WeightedKeyState).start;
/** Virtual finish: the order of the keys whose start has come (then activation order). */
const finishOf = (key: KeyState): number => (key as WeightedKeyState).finish;

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
 */
export class WeightedTurns implements Turns {
  readonly #pending = new KeyHeap(startOf);
  readonly #reached = new KeyHeap(finishOf);
  #time = 0;
  #totalWeight = 0;
  size = 0;

  add(state: KeyState): void {
    const key = state as WeightedKeyState; // a queue with weights makes only those
    if (key.start < this.#time) key.start = this.#time;
    key.finish = key.start + 1 / key.weight;
    this.#totalWeight += key.weight;
    this.size++;
    this.#insert(key);
  }

  remove(state: KeyState): void {
    const key = state as WeightedKeyState;
    (key.startReached ? this.#reached : this.#pending).remove(key);
    this.#totalWeight -= key.weight;
    if (--this.size === 0) this.#totalWeight = 0; // no drift left behind
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
    this.#time += 1 / this.#totalWeight;
    key.start = key.finish;
    key.finish = key.start + 1 / key.weight;
    this.#insert(key);
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
