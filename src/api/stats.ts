import type { WorkerStatus } from './worker-status.js';

/**
 * Percentiles of a timing, in ms. A quiet worker times every job; a busy one, past 256 jobs
 * added in a second, about one in `sampleEvery` (64), each standing for that many: the mean and
 * the percentiles are those of every job (estimated when thinned). With nothing timed yet they
 * are `null`.
 */
export interface TimingStats {
  /** Jobs timed (sampled jobs measured). */
  count: number;
  /** Mean over every job, ms, or `null` when nothing was timed. */
  mean: number | null;
  /** Median, ms, or `null`. */
  p50: number | null;
  /** 90th percentile, ms, or `null`. */
  p90: number | null;
  /** 99th percentile, ms, or `null`. */
  p99: number | null;
  /** Largest timed, ms, or `null`. */
  max: number | null;
  /** Sum over the jobs timed, ms (exact: the percentiles come from a histogram, the sum does not). */
  sum: number;
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
  /** Adds that returned the handle of a job already in use with the same id (not counted in `added`). */
  deduplicated: number;
}

/** One source's numbers. */
export interface SourceStats {
  /** Jobs waiting, due or delayed (`queue.length`). */
  waiting: number;
  /** Waiting jobs that are due (a redriven job waiting for its predecessor's handler to settle counts here). */
  due: number;
  /** Waiting jobs that are not due yet. */
  delayed: number;
  /** Its jobs running now. */
  running: number;
  /**
   * How long its oldest due job has been waiting, ms, or `null` when none is due. In a FIFO
   * source (its next job) exact to its tick of adds (one synchronous run); in a priority or
   * keyed queue, measured on the sampled jobs and on the first job added to an empty source (so a
   * stuck queue always shows), else an upper bound.
   */
  oldestDueAgeMs: number | null;
  /** Counters of its jobs since it was bound. */
  counters: WorkerCounters;
  /** Its jobs' wait times, like the worker's `waitTime`. */
  waitTime: TimingStats;
  /** Its jobs' run times, like the worker's `runTime`. */
  runTime: TimingStats;
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
  /** Past 256 jobs added in a second, about one job in this many is timed (see docs/observability.md, "stats()"). */
  sampleEvery: number;
}
