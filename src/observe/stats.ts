import type { SourceStats, WorkerStats } from '../api/stats.js';
import type { Core } from '../core/core.js';
import { SAMPLE_EVERY } from '../core/sampling.js';
import { setEntry } from '../internal/entry.js';
import type { Source } from '../sources/source.js';
import { type Metrics, noTiming } from './timings.js';

/** A worker's {@link WorkerStats} at `now` (its monotonic clock). @internal */
export function snapshot(name: string, core: Core, metrics: Metrics, now: number): WorkerStats {
  const sources: Record<string, SourceStats> = {};
  let oldest: number | null = null;
  let dueButHeld = 0;
  // The worker's lanes are its public sources, which keep the timings.
  for (const source of core.list as readonly Source[]) {
    const age = source.oldestDueAgeMs(now);
    if (age !== null && (oldest === null || age > oldest)) oldest = age;
    // Delayed jobs whose time has come are due, though they may still wait in the delayed jobs
    // (a promotion moves them as they are needed): counted there, in O(their number), not moved.
    const dueInDelayed = source.delayed.length === 0 ? 0 : source.delayed.countDueBy(now);
    dueButHeld += dueInDelayed;
    setEntry(sources, source.name, {
      waiting: source.length,
      // A redrive parked behind its predecessor's handler (`Core.park`) is due: it joins as soon as that settles.
      due: source.due.length + dueInDelayed + source.parkedCount,
      delayed: source.delayed.length - dueInDelayed,
      running: source.running,
      oldestDueAgeMs: age,
      counters: { ...source.counters },
      waitTime: source.timings === undefined ? noTiming() : source.timings.wait.summary(),
      runTime: source.timings === undefined ? noTiming() : source.timings.run.summary(),
    });
  }
  return {
    name,
    status: core.status,
    concurrency: core.concurrency,
    running: core.slotsInUse,
    waiting: core.queued,
    delayed: core.delayed - dueButHeld,
    counters: { ...core.counters },
    oldestDueAgeMs: oldest,
    sources,
    waitTime: metrics.wait.summary(),
    runTime: metrics.run.summary(),
    sampleEvery: SAMPLE_EVERY,
  };
}
