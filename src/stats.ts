import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import type { Core } from './core/core.js';
import { setEntry } from './internal/entry.js';
import { UNTIMED, type JobRecord } from './job.js';
import type { WorkerStatus } from './worker.js';

/**
 * Timings are measured on one job in this many (by add order), so that measuring costs next
 * to nothing on the hot path; percentiles over a sample this size are as good as over all.
 */
export const SAMPLE_EVERY = 8;
/** @internal `(seq & SAMPLE_MASK) === 0` picks the sampled jobs. */
export const SAMPLE_MASK = SAMPLE_EVERY - 1;

/** Percentiles of a timing, in ms, over the sampled jobs. */
export interface TimingStats {
  /** Sampled jobs measured. */
  count: number;
  /** Mean, ms (0 when nothing was measured). */
  mean: number;
  /** Median, ms. */
  p50: number;
  /** 90th percentile, ms. */
  p90: number;
  /** 99th percentile, ms. */
  p99: number;
  /** Largest, ms. */
  max: number;
}

/** Counters since the worker was created. */
export interface WorkerCounters {
  /** Jobs added (retries are not new jobs). */
  added: number;
  /** Attempts started. */
  started: number;
  /** Jobs that succeeded. */
  succeeded: number;
  /** Jobs that failed for good. */
  failed: number;
  /** Failed attempts that were retried. */
  retried: number;
  /** Jobs kept as dead letters. */
  dead: number;
  /** Jobs cancelled (handle, signal, purge, shutdown). */
  cancelled: number;
  /** Adds that found their `id` in use in the source and returned the existing handle (not counted in `added`). */
  deduplicated: number;
}

/** One source's counters since it was bound. */
export interface SourceCounters {
  /** Adds that found their `id` in use in this source and returned the existing handle. */
  deduplicated: number;
}

/** One source's numbers. */
export interface SourceStats {
  /** Jobs waiting, due or delayed (`queue.length`). */
  waiting: number;
  /** Waiting jobs that are due. */
  due: number;
  /** Waiting jobs that are not due yet. */
  delayed: number;
  /** Its jobs running now. */
  running: number;
  /**
   * How long its oldest due job has been waiting, ms, or `null` when none is due. Measured on
   * the sampled jobs and on the first job added to an empty source, so a stuck queue always shows.
   */
  oldestDueAgeMs: number | null;
  /** Its counters since it was bound. */
  counters: SourceCounters;
}

/**
 * What `worker.stats()` returns.
 *
 * @example
 * ```ts
 * const { counters, waitTime, sources } = worker.stats();
 * console.log(counters.succeeded, waitTime.p99, sources.emails.oldestDueAgeMs);
 * ```
 */
export interface WorkerStats {
  /** The worker's name. */
  name: string;
  /** Its status. */
  status: WorkerStatus;
  /** Its concurrency. */
  concurrency: number;
  /** Slots in use. */
  running: number;
  /** Jobs waiting in every source, due or delayed. */
  waiting: number;
  /** Of those, not due yet. */
  delayed: number;
  /** Counters since creation. */
  counters: WorkerCounters;
  /** The largest `oldestDueAgeMs` of its sources, or `null`. */
  oldestDueAgeMs: number | null;
  /** Per source, by name. */
  sources: Record<string, SourceStats>;
  /** From add (or becoming due) to start, first attempts only, over the sampled jobs. */
  waitTime: TimingStats;
  /** From start to the handler settling, over the sampled jobs. */
  runTime: TimingStats;
  /** One job in this many is timed. */
  sampleEvery: number;
}

/** The two timing histograms of one worker (its counters are the core's). @internal */
export class Metrics {
  /**
   * Times a sampled job's wait (first attempt) and marks the start of its run, at `now`. Until a
   * job settles its `value` field is free, so a sampled job carries its add time and then its
   * start time there: no map, and no extra field on every job.
   */
  sampleStart(job: JobRecord, now: number): void {
    const addedAt = job.value;
    if (typeof addedAt === 'number' && job.attempts === 1) {
      // Waiting starts when the job is due: at add, or at its due time for a delayed job.
      const dueFor = job.dueAt === UNTIMED ? now - addedAt : Math.min(now - addedAt, now - job.dueAt);
      this.recordWait(Math.max(0, dueFor));
    }
    job.value = now;
    job.home.pruneSamples();
  }

  /** Times a sampled job's run, which ended at `now`. */
  sampleEnd(job: JobRecord, now: number): void {
    this.recordRun(now - (job.value as number));
    job.value = undefined;
  }

  readonly #wait: RecordableHistogram = createHistogram();
  readonly #run: RecordableHistogram = createHistogram();

  recordWait(ms: number): void {
    this.#wait.record(toMicros(ms));
  }

  recordRun(ms: number): void {
    this.#run.record(toMicros(ms));
  }

  waitTime(): TimingStats {
    return summarise(this.#wait);
  }

  runTime(): TimingStats {
    return summarise(this.#run);
  }
}

/** Histograms take integers >= 1: we record microseconds. */
function toMicros(ms: number): number {
  return Math.max(1, Math.round(ms * 1000));
}

function summarise(histogram: RecordableHistogram): TimingStats {
  const count = histogram.count;
  if (count === 0) return { count: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const ms = (micros: number): number => Math.round(micros) / 1000;
  return {
    count,
    mean: ms(histogram.mean),
    p50: ms(histogram.percentile(50)),
    p90: ms(histogram.percentile(90)),
    p99: ms(histogram.percentile(99)),
    max: ms(histogram.max),
  };
}

/** A worker's {@link WorkerStats} at `now` (its monotonic clock). @internal */
export function snapshot(name: string, core: Core, metrics: Metrics, now: number): WorkerStats {
  const sources: Record<string, SourceStats> = {};
  let oldest: number | null = null;
  for (const source of core.list) {
    const age = source.oldestDueAgeMs(now);
    if (age !== null && (oldest === null || age > oldest)) oldest = age;
    setEntry(sources, source.name, {
      waiting: source.length,
      due: source.due.length,
      delayed: source.delayed.length,
      running: source.running,
      oldestDueAgeMs: age,
      counters: { deduplicated: source.deduplicated },
    });
  }
  return {
    name,
    status: core.status,
    concurrency: core.concurrency,
    running: core.slotsInUse,
    waiting: core.waiting,
    delayed: core.delayed,
    counters: { ...core.counters },
    oldestDueAgeMs: oldest,
    sources,
    waitTime: metrics.waitTime(),
    runTime: metrics.runTime(),
    sampleEvery: SAMPLE_EVERY,
  };
}
