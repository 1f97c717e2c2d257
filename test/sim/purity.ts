/**
 * "Reads change nothing" (SPEC 12): a fingerprint of the core's whole observable state, and every
 * read that the shell, the stats and the strategies make of it. The simulator fingerprints the
 * state, makes the reads group by group, and fails when a group left the fingerprint different.
 *
 * The fingerprint is a walk of every own field reachable from the core, its lanes and the jobs
 * (counters, flags, indexes, horizons, rate windows' latest starts, key states, extras, dead
 * letters, the names, the list, the picker's own state...), objects numbered in the order first
 * met so that a change of identity or of order shows, plus what only a method can tell of state
 * kept in `#private` fields: the lengths of the due and delayed orders and their heads, the
 * eligible set, the deadlines, the outbox's pending flag, the key machinery's counts. It uses
 * only plain field reads and O(1) accessors; a few of those are also reads under test (the key
 * machinery's `wakeAt`, `unpausedDue`, `hasReady`, the core's `needsClock` and promotion flags):
 * for them the check sees a change that is not made again by the second read.
 *
 * What it cannot see: other `#private` state (the tick table of a lane's `WaitAges`, its sampled
 * adds, the dead-letter store's entries, the dispatcher's free ordinals, the promotion's budget).
 * Two reads tidy such storage and change nothing a caller can see, so they are not counted:
 * `peek` and `nextDueAt` drop cancelled jobs from the head of a container, and `oldestDueAgeMs`
 * lets the tick table drop entries older than the oldest waiting job.
 */
import type { Core } from '../../src/core/core.js';
import type { CoreJob } from '../../src/core/job-record.js';
import type { KeyedJobs } from '../../src/core/keys/keyed-jobs.js';
import type { Lane } from '../../src/core/lane.js';
import { snapshot } from '../../src/observe/stats.js';
import { Metrics } from '../../src/observe/timings.js';

/** The keys the simulator gives jobs (see `simKey` in driver.ts), and one that is never used. */
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k9'];

/**
 * The core's observable state, as a flat list of values (an object stands as its number, in the
 * order first met); with `paths`, what each value is, for a failure's report.
 */
export function stateFingerprint(core: Core, lanes: readonly Lane[], jobs: Iterable<CoreJob>, paths?: string[]): unknown[] {
  const values: unknown[] = [];
  const ids = new Map<object, number>();
  // Paths are made only when asked for (a failure's report): a check makes a fingerprint per group of reads.
  const named = paths !== undefined;
  const put = (path: string | undefined, value: unknown): void => {
    values.push(value);
    if (named) paths.push(path as string);
  };
  const walk = (path: string | undefined, value: unknown): void => {
    if (value === null || typeof value !== 'object') {
      put(path, typeof value === 'function' ? `function ${value.name}` : value);
      return;
    }
    const seen = ids.get(value);
    if (seen !== undefined) {
      put(path, `@${seen}`);
      return;
    }
    const id = ids.size;
    ids.set(value, id);
    put(path, (value as { constructor?: { name?: string } }).constructor?.name ?? 'Object');
    if (value instanceof Map) {
      let i = 0;
      for (const [key, entry] of value) {
        walk(named ? `${path}{${i}}.key` : undefined, key);
        walk(named ? `${path}{${i}}` : undefined, entry);
        i++;
      }
    } else if (value instanceof Set) {
      let i = 0;
      for (const entry of value) walk(named ? `${path}{${i++}}` : undefined, entry);
    } else if (value instanceof Date) {
      put(named ? `${path}.time` : undefined, value.getTime());
    } else if (ArrayBuffer.isView(value)) {
      put(path, Array.from(value as unknown as ArrayLike<number>).join(','));
    } else {
      const record = value as Record<string, unknown>;
      for (const key in record) if (Object.hasOwn(record, key)) walk(named ? `${path}.${key}` : undefined, record[key]);
    }
  };

  // What only a method tells of the core's private state (O(1) accessors, see above).
  const dispatcher = core.dispatcher;
  put('core.phase', core.phase);
  put('core.needsClock', core.needsClock);
  put('core.promotionPending', core.promotionPending);
  put('core.promotionContinues', core.promotionContinues);
  put('core.startsWaitForOrder', core.startsWaitForOrder);
  put('core.deadlines.length', core.deadlines.length);
  put('core.deadlines.nextAt()', core.deadlines.nextAt());
  put('core.outbox.pending', core.outbox.pending);
  put('core.dispatcher.eligible.size', dispatcher.eligible.size);
  for (let i = 0; i < dispatcher.list.length; i++) put(`core.dispatcher.eligible.has(${i})`, dispatcher.eligible.has(i));
  for (const lane of lanes) {
    const name = `lane ${JSON.stringify(lane.name)}`;
    const keys = lane.keys;
    put(`${name} due.length`, lane.due.length);
    if (keys === undefined) put(`${name} due.peek()`, lane.due.peek()?.seq);
    put(`${name} delayed.length`, lane.delayed.length);
    put(`${name} delayed.peek()`, lane.delayed.peek()?.seq);
    put(`${name} delayed.nextDueAt()`, lane.delayed.nextDueAt());
    put(`${name} rate.openAt()`, lane.rate?.openAt());
    if (keys !== undefined) {
      put(`${name} keys.length`, keys.length);
      put(`${name} keys.unpausedDue`, keys.unpausedDue);
      put(`${name} keys.keyCount`, keys.keyCount);
      put(`${name} keys.hasReady`, keys.hasReady);
      put(`${name} keys.wakeAt()`, keys.wakeAt());
    }
  }
  // Every field: the core first (its list, picker, counters, dead letters...), then the lanes
  // (those that left the list too), then the jobs (their packed state, extras, keys' states).
  walk('core', core);
  for (let at = 0; at < lanes.length; at++) walk(`lanes[${at}]`, lanes[at]);
  let i = 0;
  for (const job of jobs) {
    const at = i++;
    walk(`jobs[${at}]`, job);
  }
  return values;
}

/**
 * Where `after` (a fingerprint taken after the reads) differs from `before`, described with the
 * path `pathsAfter` gives the value; `undefined` when they are the same.
 */
export function firstDifference(before: readonly unknown[], after: readonly unknown[], pathsAfter: () => string[]): string | undefined {
  const n = Math.max(before.length, after.length);
  let differing = 0;
  let first = -1;
  for (let i = 0; i < n; i++) {
    if (Object.is(before[i], after[i])) continue;
    differing++;
    if (first < 0) first = i;
  }
  if (first < 0) return undefined;
  const show = (value: unknown): string => (typeof value === 'string' ? value : String(value));
  const path = pathsAfter()[first] ?? '(past the end)';
  return `${path} was ${first < before.length ? show(before[first]) : '(nothing)'}, is now ${first < after.length ? show(after[first]) : '(nothing)'} (${differing} of ${n} values differ)`;
}

/** What the reads returned, kept so that none is a dead read. */
let sink = 0;
const use = (value: unknown): void => {
  sink = (sink + (typeof value === 'number' ? value : value === undefined || value === null ? 0 : 1)) | 0;
};

/** One group of reads: what the shell, the stats or a strategy reads of the core at `now`. */
export type Reads = (core: Core, lanes: readonly Lane[], jobs: readonly CoreJob[], now: number) => void;

/** Every read, by group (a failure names the group that changed the state). */
export const READS: readonly (readonly [string, Reads])[] = [
  [
    'the lanes’ lengths and ages (Lane.length, dueLength, oldestDueAgeMs, isEligible, parkedOfKey)',
    (_core, lanes, _jobs, now) => {
      for (const lane of lanes) {
        use(lane.length);
        use(lane.dueLength);
        use(lane.oldestDueAgeMs(now));
        use(lane.isEligible(now));
        if (lane.keys !== undefined) for (const key of KEYS) use(lane.parkedOfKey(key));
        use(lane.delayed.countDueBy(now));
        use(lane.delayed.backlogged);
      }
    },
  ],
  [
    'the views a strategy reads (SourceView: name, index, priority, weight, length, running, eligible)',
    (_core, lanes) => {
      for (const lane of lanes) {
        const view = lane.view;
        use(view.name);
        use(view.index);
        use(view.priority);
        use(view.weight);
        use(view.length);
        use(view.running);
        use(view.eligible);
      }
    },
  ],
  [
    'the key figures (keyCountAt, keyCount, stats, waitingOf, has, unpausedDue, hasReady, wakeAt, waitingInPausedKeys, pausedKeysWithWork)',
    (_core, lanes, _jobs, now) => {
      for (const lane of lanes) {
        const keys = lane.keys as KeyedJobs | undefined;
        if (keys === undefined) continue;
        use(keys.keyCountAt(now));
        use(keys.keyCount);
        for (const key of KEYS) {
          const stats = keys.stats(key, now);
          use(stats.waiting + stats.due + stats.delayed + stats.running);
          use(keys.waitingOf(key));
          use(keys.has(key));
        }
        use(keys.unpausedDue);
        use(keys.hasReady);
        use(keys.wakeAt());
        use(keys.waitingInPausedKeys());
        use(keys.pausedKeysWithWork(8).length);
      }
    },
  ],
  [
    'the worker’s figures (status, wakeAt, needsClock, list, admitNeedsTime, needsVerdict, dispatcher.wakeAt)',
    (core, lanes, jobs) => {
      use(core.status);
      use(core.wakeAt());
      use(core.needsClock);
      use(core.list.length);
      use(core.promotionPending);
      use(core.promotionContinues);
      use(core.startsWaitForOrder);
      use(core.dispatcher.wakeAt(false));
      use(core.dispatcher.wakeAt(true));
      for (const lane of lanes) if (lane.index >= 0) use(core.admitNeedsTime(lane, false) || core.admitNeedsTime(lane, true));
      for (const job of jobs) use(core.needsVerdict(job));
    },
  ],
  [
    'the stats snapshot (stats(): snapshot)',
    (core, _lanes, _jobs, now) => {
      use(JSON.stringify(snapshot('sim', core, new Metrics(), now)));
    },
  ],
];
