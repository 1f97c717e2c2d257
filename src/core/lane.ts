import { KeyedJobs } from './keys/keyed-jobs.js';
import { DelayedJobs, type DueJobs } from './due/due-jobs.js';
import { RateWindow } from './rate-window.js';
import type { SourceView } from '../api/strategy.js';
import type { WorkerCounters } from '../api/stats.js';
import { zeroCounters } from './counters.js';
import { type CoreJob, type KeyedJob, State } from './job-record.js';
import type { KeyState } from './keys/key-state.js';
import { WaitAges } from './wait-ages.js';

/** What a lane is made with: the bind options the core keeps. @internal */
export interface LaneOptions {
  priority?: number | undefined;
  weight?: number | undefined;
  concurrency?: number | undefined;
  rateLimit?: { limit: number; interval: number } | undefined;
}

/**
 * The core's record of one source (SPEC 12): its waiting jobs (due, delayed, parked redrives), its
 * own limits, counters and eligibility, and its place in the worker's list. The public sources
 * (`Queue`, `PriorityQueue`, `Subscription`, `RemoteSource`) extend it; only the core changes
 * its fields, and the shell reads them. Reads change nothing.
 *
 * (Not internal as a whole: the public sources' declarations extend it, and inherit its
 * public members from it; every other member is.)
 */
export class Lane {
  /** The source's name, unique within its worker. */
  readonly name: string;
  /** Its priority number in the list, or `undefined`. */
  readonly priority: number | undefined;
  /** Its weight under `Strategy.Weighted`. */
  readonly weight: number;
  /** @internal Most of its jobs running at once. */
  readonly maxRunning: number;
  /** @internal Bind order within the worker: the tie-break among equal priorities. */
  readonly bindOrder: number;
  /** @internal Its due jobs, in the order they start. */
  readonly due: DueJobs;
  /** @internal Its delayed jobs. */
  readonly delayed: DelayedJobs;
  /** @internal The per-key machinery of a queue bound with `keys` (then also `due` and `delayed`). */
  readonly keys: KeyedJobs | undefined;
  /** @internal Its own rate limit's window. */
  readonly rate: RateWindow | undefined;
  /** @internal The live view a strategy reads. */
  readonly view: SourceView;
  /** @internal Whether its jobs belong to a remote engine, which owns their retries (SPEC 9). */
  readonly isRemote: boolean = false;
  /** @internal Position in the list; kept current by the dispatcher. */
  index = -1;
  /** @internal Whether it is in the dispatcher's eligible set (kept by `Dispatcher.touch`). */
  inEligible = false;
  /** @internal The rate-window opening time it waits for in the dispatcher's heap, or NaN. */
  rateOpensAt = Number.NaN;
  /** @internal A small number of its own while bound (reused after it leaves), for pickers' typed arrays. */
  ordinal = -1;
  /** @internal Jobs of this lane in flight. */
  running = 0;
  /** @internal Live waiting jobs whose `dueAt` is a real time (ordering needs the clock while any exist). */
  timed = 0;
  /** @internal Set once the lane takes no more jobs and should leave the list when drained. */
  retiring = false;
  /** @internal Set while its engine cannot be reached (a remote source): it is then not eligible. */
  unreachable = false;
  /** @internal Set while producers wait for it to shrink (`onSizeLessThan`): the core then notes each shrink. */
  sizeWatched = false;
  /** @internal Counters of its jobs since it was bound; the core writes them with the worker's. */
  readonly counters: WorkerCounters = zeroCounters();
  /** @internal Redrives parked behind their predecessor's running handler (see `Core.park`). */
  parked: Set<CoreJob> | undefined = undefined;
  /** @internal The jobs in use that have a user id, by id; made on the first one (see `job-ids.ts`). */
  ids: Map<string, CoreJob> | undefined = undefined;
  /** @internal What it remembers of its waiting jobs' add times (see {@link WaitAges}). */
  readonly ages: WaitAges;

  /** @internal */
  constructor(due: DueJobs, name: string, bindOrder: number, options: LaneOptions | undefined) {
    this.due = due;
    this.keys = due instanceof KeyedJobs ? due : undefined;
    this.delayed = this.keys === undefined ? new DelayedJobs() : this.keys.delayed;
    this.name = name;
    this.bindOrder = bindOrder;
    this.priority = options?.priority;
    this.weight = options?.weight ?? 1;
    this.maxRunning = options?.concurrency ?? Infinity;
    this.rate = options?.rateLimit === undefined ? undefined : new RateWindow(options.rateLimit.limit, options.rateLimit.interval);
    this.view = new LaneView(this);
    this.ages = new WaitAges(!due.needsEveryDue && this.keys === undefined);
  }

  /** Jobs waiting in it, due or delayed. */
  get length(): number {
    return this.due.length + this.delayed.length + this.parkedCount;
  }

  /** @internal Redrives parked behind their predecessor's running handler: due, waiting to join. */
  get parkedCount(): number {
    return this.parked === undefined ? 0 : this.parked.size;
  }

  /**
   * @internal The length a strategy reads (`SourceView.length`): its due jobs, those of paused
   * keys left out, with the due jobs a promotion in progress still holds with the delayed ones
   * (counted where they wait, not moved: a read changes nothing). O(1) but during a promotion
   * whose due jobs cannot be counted at once, then O(those due).
   */
  get dueLength(): number {
    const delayed = this.delayed;
    const horizon = delayed.horizon;
    const keys = this.keys;
    if (keys !== undefined) {
      if (horizon === -Infinity) return keys.unpausedDue;
      return keys.unpausedDue + delayed.countDueWhere(horizon, isOfUnpausedKey);
    }
    return horizon === -Infinity ? this.due.length : this.due.length + delayed.countDueBy(horizon);
  }

  /** @internal Whether this lane may give a job at `now`. */
  isEligible(now: number): boolean {
    return (
      this.due.length > 0 &&
      this.running < this.maxRunning &&
      !this.unreachable &&
      (this.rate === undefined || this.rate.allows(now)) &&
      (this.keys === undefined || this.keys.hasReady)
    );
  }

  /**
   * @internal How long the oldest due job has waited at `now`, ms (a parked redrive is due since
   * its redrive), or `null` with none due (see {@link WaitAges}).
   */
  oldestDueAgeMs(now: number): number | null {
    let age = this.due.length === 0 ? null : this.ages.oldestInDue(this.due, now);
    // A delayed job whose time has come is due where it waits, moved or not (a read moves nothing).
    const delayed = this.delayed;
    if (delayed.length > 0) {
      const dueAt = delayed.nextDueAt();
      if (dueAt <= now) age = Math.max(age ?? 0, roundAge(now - dueAt));
    }
    const parked = this.parked;
    if (parked !== undefined && parked.size > 0) {
      // A redrive parked behind its predecessor's handler is due since its redrive.
      let since = Infinity;
      for (const job of parked) since = Math.min(since, job.ext?.parkedSince ?? now);
      age = Math.max(age ?? 0, roundAge(now - since));
    }
    return age;
  }

  /**
   * @internal Redrives of key `name` parked behind their predecessor's running handler (see
   * `Core.park`): they wait, due, in {@link parked} rather than in the key's own jobs until that
   * handler returns. O(parked redrives of this lane), none at all in the common case.
   */
  parkedOfKey(name: string): number {
    const parked = this.parked;
    if (parked === undefined || parked.size === 0) return 0;
    let count = 0;
    for (const job of parked) if (job.key === name) count++;
    return count;
  }
}

/** The live view of a lane that a strategy reads. @internal */
class LaneView implements SourceView {
  readonly lane: Lane;
  constructor(lane: Lane) {
    this.lane = lane;
  }
  get name(): string {
    return this.lane.name;
  }
  get index(): number {
    return this.lane.index;
  }
  get priority(): number | undefined {
    return this.lane.priority;
  }
  get weight(): number {
    return this.lane.weight;
  }
  get length(): number {
    return this.lane.dueLength;
  }
  get running(): number {
    return this.lane.running;
  }
  get eligible(): boolean {
    return this.lane.inEligible;
  }
}

/** @internal Recovers the lane behind a view, or `undefined` if it is not one of ours. */
export function laneOfView(view: unknown): Lane | undefined {
  return view instanceof LaneView ? view.lane : undefined;
}

/** Whether a held job counts in its keyed lane's `dueLength`: live, and of a key that is not paused. */
function isOfUnpausedKey(job: CoreJob): boolean {
  return job.state !== State.Cancelled && !((job as KeyedJob).keyState as KeyState).paused;
}

/** An age in ms, to the microsecond. */
function roundAge(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
