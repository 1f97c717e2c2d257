import { DelayedJobs, type DueJobs } from '../due/due-jobs.js';
import { type CoreJob, type KeyedJob, State } from '../job-record.js';
import type { KeyStats } from '../../api/keys.js';
import { keyName } from './key-name.js';
import { KeyHeap } from './key-heap.js';
import { KeyRate, KeyState, Place, WeightedKeyState } from './key-state.js';
import { RoundRobinTurns, WeightedTurns, type Turns } from './turns.js';

/** What a keyed queue was bound with, once checked (see `keys.ts`). @internal */
export interface KeyLimits {
  /** Most jobs of one key running at once. */
  concurrency: number;
  /** Most jobs of one key waiting. */
  capacity: number;
  /** Per-key rate limit. */
  rateLimit: { limit: number; interval: number } | undefined;
  /** Whether keys have weights (then the weighted turn order). */
  weighted: boolean;
}

/** The jobs of one keyed queue that were removed by a purge. @internal */
export interface Purged {
  due: CoreJob[];
  delayed: CoreJob[];
}

/** When a key waiting outside the turn order can come back (or be forgotten). */
const atOf = (key: KeyState): number => (key.rate as KeyRate).at;

/**
 * The delayed jobs of a keyed queue: one heap for the whole queue (promotion stays one pass over
 * the earliest jobs), which keeps each key's count of delayed jobs.
 *
 * @internal
 */
export class KeyedDelayedJobs extends DelayedJobs {
  readonly #keys: KeyedJobs;

  constructor(keys: KeyedJobs) {
    super();
    this.#keys = keys;
  }

  override push(job: CoreJob): void {
    super.push(job);
    this.#keys.delayedArrived(job);
  }

  override shiftDue(now: number): CoreJob | undefined {
    const job = super.shiftDue(now);
    if (job !== undefined) this.#keys.delayedLeft(job);
    return job;
  }

  /** Puts back jobs a purge of one key took out with the others (their keys' counts untouched). */
  restore(jobs: readonly CoreJob[]): void {
    for (const job of jobs) super.push(job);
  }
}

/**
 * The waiting jobs of a queue bound with `keys` (SPEC 10), split by key, and the turn order
 * between keys: the per-key machinery the core drives. It is the queue's `due` container (its
 * `length` counts every due job, paused keys included), and the core tells it of each
 * transition that touches a key: a job due (add, promote), a start ({@link take}), a finish, a
 * cancel, a purge, a pause, time passing ({@link advance}). Every change of whether a key can
 * run happens in one of those, so whether the queue has an eligible key ({@link hasReady})
 * changes only at the core's transitions.
 *
 * A key that can run is in the turn order (`Place.Ready`); one that cannot waits outside it:
 * idle (an event brings it back), in a heap by the time its rate window opens, or, with nothing
 * waiting or running, in a heap by the time its last start leaves the window, after which it is
 * forgotten. A key with nothing waiting or running, not paused and no start in its window is
 * forgotten at once, so memory follows the active keys.
 *
 * @internal
 */
export class KeyedJobs implements DueJobs {
  readonly delayed: KeyedDelayedJobs;
  readonly limits: KeyLimits;
  /** Weights of keys about to become active, asked of `keys.weight` by the shell before the add. */
  pendingWeights: Map<string, number> | undefined = undefined;
  /**
   * The active keys, by {@link mapKey} of their name: a key whose name is a number's
   * (`String(n)`) is held by that number, so that a key given as a number (the common case,
   * a user or tenant id) is found without making a string and hashing it (see {@link nameOf}).
   */
  readonly #keys = new Map<string | number, KeyState>();
  /** The key {@link nameOf} last found: the add that follows needs no second lookup. */
  #found: KeyState | undefined = undefined;
  /**
   * The name {@link nameOf} last made of a number that was not an active key, and that number,
   * until a key is made active: the add that follows makes the key active under that number
   * without parsing the name back, and without a second lookup (no key was made active since,
   * so it still is not).
   */
  #madeName: string | undefined = undefined;
  #madeFrom = 0;
  readonly #turns: Turns;
  readonly #rateWait = new KeyHeap(atOf);
  readonly #cooling = new KeyHeap(atOf);
  /** Makes a key's due jobs (a priority queue's); `undefined`: the key is its own FIFO (see `KeyState`). */
  readonly #perKey: (() => DueJobs) | undefined;
  #live = 0;
  #pausedDue = 0;
  #order = 0;
  /** The latest time the core has told of: rate windows are judged at it between transitions. */
  #now = Number.NEGATIVE_INFINITY;

  constructor(limits: KeyLimits, perKey: (() => DueJobs) | undefined) {
    this.limits = limits;
    this.#perKey = perKey;
    this.#turns = limits.weighted ? new WeightedTurns() : new RoundRobinTurns(this.#keys);
    this.delayed = new KeyedDelayedJobs(this);
  }

  /** Every due job, paused keys included. */
  get length(): number {
    return this.#live;
  }

  /** Due jobs of keys that are not paused (a strategy's `SourceView.length`). */
  get unpausedDue(): number {
    return this.#live - this.#pausedDue;
  }

  /** Active keys. */
  get keyCount(): number {
    return this.#keys.size;
  }

  /**
   * Active keys at `now`, as {@link advance} would leave them, without changing anything: less
   * the keys whose last start has left its rate window by then (O(active keys) when there are
   * such keys, else O(1)).
   */
  keyCountAt(now: number): number {
    const first = this.#cooling.peek();
    if (first === undefined || atOf(first) > now) return this.#keys.size;
    let leaving = 0;
    for (const key of this.#keys.values()) if (key.place === Place.Cooling && atOf(key) <= now) leaving++;
    return this.#keys.size - leaving;
  }

  /** Whether some key may give a job now: the queue is eligible only then (with its own limits). */
  get hasReady(): boolean {
    return this.#turns.size > 0;
  }

  /** Whether time alone can change a key (rate windows). */
  get timed(): boolean {
    return this.limits.rateLimit !== undefined;
  }

  /** Whether `name` is active. */
  has(name: string): boolean {
    return this.#foundAs(name) !== undefined || this.#keys.has(mapKey(name));
  }

  /** Figures of one key at `now` (all zero for a key that is not active). */
  stats(name: string, now: number): KeyStats {
    const key = this.#keys.get(mapKey(name));
    if (key === undefined) return { waiting: 0, due: 0, delayed: 0, running: 0, paused: false };
    const held = this.#heldDue(key, now);
    return {
      waiting: key.jobs.length + key.delayed,
      due: key.jobs.length + held,
      delayed: key.delayed - held,
      running: key.running,
      paused: key.paused,
    };
  }

  /**
   * Delayed jobs of `key` that are due at `now` but still held with the delayed ones (their time
   * has come while every slot was busy, or a burst is moving in batches, see
   * `Promotion.orderBacklog`): O(the queue's delayed jobs due by then), and only for a key with
   * delayed jobs.
   */
  #heldDue(key: KeyState, now: number): number {
    if (key.delayed === 0) return 0;
    const at = Math.max(this.delayed.horizon, now);
    return this.delayed.countDueWhere(at, (job) => (job as KeyedJob).keyState === key && job.state !== State.Cancelled);
  }

  /** Jobs waiting in paused keys, due or delayed: O(active keys). */
  waitingInPausedKeys(): number {
    let waiting = 0;
    for (const key of this.#keys.values()) if (key.paused) waiting += key.jobs.length + key.delayed;
    return waiting;
  }

  /** The paused keys that hold waiting jobs (due or delayed), at most `max` of them: O(active keys), for the exit warning. */
  pausedKeysWithWork(max: number): string[] {
    const names: string[] = [];
    for (const key of this.#keys.values()) {
      if (names.length >= max) break;
      if (key.paused && key.jobs.length + key.delayed > 0) names.push(key.name);
    }
    return names;
  }

  /** Jobs of `name` waiting, due or delayed. */
  waitingOf(name: string): number {
    const key = this.#keys.get(mapKey(name));
    return key === undefined ? 0 : key.jobs.length + key.delayed;
  }

  /** The earliest time a rate window of a key that waits only for it opens, or `Infinity`. */
  wakeAt(): number {
    const first = this.#rateWait.peek();
    return first === undefined ? Number.POSITIVE_INFINITY : atOf(first);
  }

  /**
   * The name of a key given to an add (`String(key)`), checked as `what` (a string or a finite
   * number, else a `TypeError`). A number of an active key gives that key's own name: the
   * string the job then holds is shared, and the lookup that follows finds it at once.
   */
  nameOf(what: string, key: unknown): string {
    if (typeof key === 'number') {
      const known = this.#keys.get(key); // NaN and Infinity are never held: they go on to be refused
      if (known !== undefined) {
        this.#found = known;
        return known.name;
      }
    }
    const name = keyName(what, key);
    if (typeof key === 'number') {
      this.#madeName = name;
      this.#madeFrom = key === 0 ? 0 : key; // -0 is held as 0, like mapKey('0')
    }
    return name;
  }

  // ---------------------------------------------------------------- due jobs (DueJobs)

  pushFresh(job: CoreJob): void {
    const key = this.#keyOf(job);
    key.jobs.pushFresh(job);
    this.#arrived(key);
  }

  pushPromoted(job: CoreJob): void {
    const key = this.#keyOf(job);
    key.jobs.pushPromoted(job);
    this.#arrived(key);
  }

  /** The next job at the last time told (the core calls {@link take} with the time itself). */
  shift(): CoreJob | undefined {
    return this.#turns.size === 0 ? undefined : this.take(this.#now);
  }

  /**
   * Which keys may run, and each key's order, depend on every due job: a burst coming due moves
   * in bounded batches, and no job starts while some of it is left to move (`Promotion.orderBacklog`).
   */
  readonly needsEveryDue = true;

  /** When nothing is due: the earliest then moves past the batch, so the queue can be eligible (as a priority queue). */
  wantsPromoted(): boolean {
    return this.#live === 0;
  }

  /** The queue's next job is not one job: callers read the keys' own. */
  peek(): CoreJob | undefined {
    return undefined;
  }

  /** Cancels go through {@link removed}, which knows the key. */
  markRemoved(): void {
    throw new Error('qmux internal: a keyed queue removes jobs through KeyedJobs.removed(job)');
  }

  drain(): CoreJob[] {
    return this.purge(undefined).due;
  }

  // ---------------------------------------------------------------- transitions

  /** A delayed job joined the queue (an add with a delay, a retry). */
  delayedArrived(job: CoreJob): void {
    const key = this.#keyOf(job);
    key.delayed++;
    this.#reconsider(key);
  }

  /** A delayed job came due; it is pushed as a promoted job next. */
  delayedLeft(job: CoreJob): void {
    ((job as KeyedJob).keyState as KeyState).delayed--;
  }

  /** Starts the next job at `now`: the key whose turn it is gives its next job. Only when {@link hasReady}. */
  take(now: number): CoreJob {
    if (now > this.#now) this.#now = now;
    const key = this.#turns.pick();
    const job = key.jobs.shift() as CoreJob;
    this.#live--;
    key.running++;
    if (key.rate !== undefined) {
      key.rate.record(now);
      key.rate.lastStartAt = now;
    }
    this.#turns.served(key);
    this.#reconsider(key);
    return job;
  }

  /** A job of this queue released its slot. */
  finished(job: CoreJob): void {
    const key = (job as KeyedJob).keyState as KeyState;
    key.running--;
    this.#reconsider(key);
  }

  /** A waiting job was cancelled (`delayed`: it was a delayed one, which the caller marks in the heap). */
  removed(job: CoreJob, delayed: boolean): void {
    const key = (job as KeyedJob).keyState as KeyState;
    if (delayed) key.delayed--;
    else {
      key.jobs.markRemoved();
      this.#live--;
      if (key.paused) this.#pausedDue--;
    }
    this.#reconsider(key);
  }

  /** Time has come to `now`: rate windows that opened let their keys back in, passed ones are forgotten. */
  advance(now: number): void {
    if (now > this.#now) this.#now = now;
    const waiting = this.#rateWait;
    for (let top = waiting.peek(); top !== undefined && atOf(top) <= now; top = waiting.peek()) {
      waiting.remove(top);
      top.place = Place.Idle;
      this.#reconsider(top);
    }
    const cooling = this.#cooling;
    for (let top = cooling.peek(); top !== undefined && atOf(top) <= now; top = cooling.peek()) {
      cooling.remove(top);
      top.place = Place.Idle;
      this.#reconsider(top);
    }
  }

  /** Pauses `name` (made active with `weight` if it was not). Returns whether it changed. */
  pause(name: string, weight: number): boolean {
    const key = this.#activeOrNew(name, weight);
    if (key.paused) return false;
    key.paused = true;
    this.#pausedDue += key.jobs.length;
    this.#reconsider(key);
    return true;
  }

  /** Resumes `name`. Returns whether it was paused. */
  resume(name: string): boolean {
    const key = this.#keys.get(mapKey(name));
    if (key === undefined || !key.paused) return false;
    key.paused = false;
    this.#pausedDue -= key.jobs.length;
    this.#reconsider(key);
    return true;
  }

  /** Takes out every waiting job of key `name`, or of every key. */
  purge(name: string | undefined): Purged {
    if (name !== undefined) {
      const key = this.#keys.get(mapKey(name));
      if (key === undefined) return { due: [], delayed: [] };
      const due = key.jobs.drain();
      this.#live -= due.length;
      if (key.paused) this.#pausedDue -= due.length;
      const delayed: CoreJob[] = [];
      if (key.delayed > 0) {
        const others: CoreJob[] = [];
        // The others' due jobs held with them (a burst moving in batches) stay due.
        const horizon = this.delayed.horizon;
        for (const job of this.delayed.drain()) (job.key === name ? delayed : others).push(job);
        this.delayed.restore(others);
        if (others.length > 0) this.delayed.horizon = horizon;
        key.delayed = 0;
      }
      this.#reconsider(key);
      return { due, delayed };
    }
    const due: CoreJob[] = [];
    const keys = [...this.#keys.values()];
    for (const key of keys) {
      for (const job of key.jobs.drain()) due.push(job);
      key.delayed = 0;
    }
    this.#live = 0;
    this.#pausedDue = 0;
    const delayed = this.delayed.drain();
    for (const key of keys) this.#reconsider(key);
    return { due, delayed };
  }

  // ---------------------------------------------------------------- keys

  /** The live state of a job's key (made active if it is not), remembered on the job. */
  #keyOf(job: CoreJob): KeyState {
    const keyed = job as KeyedJob;
    const known = keyed.keyState as KeyState | undefined;
    // A job that already joined keeps its key active (waiting, delayed or running): same state.
    if (known !== undefined) return known;
    const name = keyed.keyName;
    const key = this.#foundAs(name) ?? this.#activeOrNew(name, this.pendingWeights?.get(name) ?? 1);
    keyed.keyState = key;
    return key;
  }

  /**
   * The key {@link nameOf} last found, if it is the active key `name` (the key of the add in
   * progress, most often): an active state of that name is the one, and a forgotten one is marked so.
   */
  #foundAs(name: string): KeyState | undefined {
    const found = this.#found;
    return found !== undefined && found.name === name && !found.forgotten ? found : undefined;
  }

  /** The active key `name`, or a new one of weight `weight`. */
  #activeOrNew(name: string, weight: number): KeyState {
    if (name === this.#madeName) return this.#activate(name, this.#madeFrom, weight);
    const heldAs = mapKey(name);
    return this.#keys.get(heldAs) ?? this.#activate(name, heldAs, weight);
  }

  #activate(name: string, heldAs: string | number, weight: number): KeyState {
    const limit = this.limits.rateLimit;
    const jobs = this.#perKey?.();
    const rate = limit === undefined ? undefined : new KeyRate(limit.limit, limit.interval);
    const order = this.#order++;
    const key = this.limits.weighted ? new WeightedKeyState(name, heldAs, jobs, rate, order, weight) : new KeyState(name, heldAs, jobs, rate, order);
    this.#turns.activated(key);
    this.#keys.set(heldAs, key);
    this.#madeName = undefined;
    return key;
  }

  #arrived(key: KeyState): void {
    this.#live++;
    if (key.paused) this.#pausedDue++;
    this.#reconsider(key);
  }

  /**
   * Puts `key` where it belongs after a change: in the turn order if it can run, waiting for its
   * rate window, idle, cooling, or forgotten. The one place that decides a key's eligibility.
   */
  #reconsider(key: KeyState): void {
    const rate = key.rate;
    if (key.jobs.length > 0 && !key.paused && key.running < this.limits.concurrency) {
      const opensAt = rate === undefined ? Number.NEGATIVE_INFINITY : rate.openAt();
      if (opensAt <= this.#now) this.#moveTo(key, Place.Ready);
      else if (key.place !== Place.RateWait || (rate as KeyRate).at !== opensAt) {
        this.#moveTo(key, Place.Idle);
        (rate as KeyRate).at = opensAt;
        this.#moveTo(key, Place.RateWait);
      }
      return;
    }
    if (key.jobs.length > 0 || key.delayed > 0 || key.running > 0 || key.paused) {
      this.#moveTo(key, Place.Idle);
      return;
    }
    const leavesAt = rate === undefined || rate.lastStartAt < 0 ? Number.NEGATIVE_INFINITY : rate.lastStartAt + rate.interval;
    if (leavesAt > this.#now) {
      if (key.place !== Place.Cooling) {
        this.#moveTo(key, Place.Idle);
        (rate as KeyRate).at = leavesAt;
        this.#moveTo(key, Place.Cooling);
      }
      return;
    }
    this.#moveTo(key, Place.Idle);
    this.#keys.delete(key.heldAs); // forgotten
    key.forgotten = true;
    this.#turns.forgotten();
    if (this.#found === key) this.#found = undefined;
  }

  #moveTo(key: KeyState, place: Place): void {
    if (key.place === place) return;
    switch (key.place) {
      case Place.Ready:
        this.#turns.remove(key);
        break;
      case Place.RateWait:
        this.#rateWait.remove(key);
        break;
      case Place.Cooling:
        this.#cooling.remove(key);
        break;
      default:
        break;
    }
    key.place = place;
    switch (place) {
      case Place.Ready:
        this.#turns.add(key);
        break;
      case Place.RateWait:
        this.#rateWait.push(key);
        break;
      case Place.Cooling:
        this.#cooling.push(key);
        break;
      default:
        break;
    }
  }
}

/**
 * How {@link KeyedJobs} holds a key of name `name`: by the number whose `String()` it is, if
 * any (so `5` and `'5'` are one key, found by number), else by the name.
 */
function mapKey(name: string): string | number {
  const first = name.charCodeAt(0);
  // Only a digit or a minus sign can start a finite number's String(): others need no parse.
  if ((first < 48 || first > 57) && first !== 45) return name;
  const n = Number(name);
  return Number.isFinite(n) && `${n}` === name ? n : name;
}
