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
  /** Sum over the sampled jobs, ms (exact: the percentiles come from a histogram, the sum does not). */
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

/** @internal A fresh set of counters, all zero. */
export function zeroCounters(): WorkerCounters {
  return { added: 0, started: 0, succeeded: 0, failed: 0, retried: 0, dead: 0, cancelled: 0, deduplicated: 0 };
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
  /** One job in this many is timed. */
  sampleEvery: number;
}

/**
 * One timing over the sampled jobs: a histogram for the percentiles and the exact sum.
 *
 * @internal
 */
export class Timing implements Recorder {
  readonly #histogram: RecordableHistogram = createHistogram();
  #sumMs = 0;

  record(ms: number): void {
    this.#histogram.record(toMicros(ms));
    this.#sumMs += ms;
  }

  summary(): TimingStats {
    return summarise(this.#histogram, this.#sumMs);
  }
}

/** What a source records into: {@link Timing} or {@link LogTiming}. @internal */
interface Recorder {
  record(ms: number): void;
  summary(): TimingStats;
}

/** Buckets of a {@link LogTiming} are this much wider than the one below: 0.2 %. */
const LOG_RATIO = Math.log(1.002);

/**
 * A timing of one source: like {@link Timing}, but made in next to no time and memory (a
 * node histogram costs about 11 kB and 50 µs, too much for every short-lived subscription). It
 * counts the sampled values in log-spaced buckets 0.2 % wide, kept in a map that holds only the
 * buckets used; a percentile is the middle of its bucket, within the smallest and largest value.
 *
 * @internal
 */
export class LogTiming implements Recorder {
  readonly #buckets = new Map<number, number>();
  #count = 0;
  #sumMs = 0;
  #minMs = Infinity;
  #maxMs = 0;

  record(ms: number): void {
    const index = Math.floor(Math.log(toMicros(ms)) / LOG_RATIO);
    this.#buckets.set(index, (this.#buckets.get(index) ?? 0) + 1);
    this.#count++;
    this.#sumMs += ms;
    if (ms < this.#minMs) this.#minMs = ms;
    if (ms > this.#maxMs) this.#maxMs = ms;
  }

  summary(): TimingStats {
    const count = this.#count;
    if (count === 0) return noTiming();
    const indexes = [...this.#buckets.keys()].sort((a, b) => a - b);
    const percentile = (p: number): number => {
      const rank = Math.max(1, Math.ceil((p / 100) * count));
      let seen = 0;
      for (const index of indexes) {
        seen += this.#buckets.get(index) as number;
        if (seen >= rank) return Math.min(this.#maxMs, Math.max(this.#minMs, Math.exp((index + 0.5) * LOG_RATIO) / 1000));
      }
      return this.#maxMs;
    };
    const ms = (value: number): number => Math.round(value * 1000) / 1000;
    return {
      count,
      mean: ms(this.#sumMs / count),
      p50: ms(percentile(50)),
      p90: ms(percentile(90)),
      p99: ms(percentile(99)),
      max: ms(this.#maxMs),
      sum: ms(this.#sumMs),
    };
  }
}

/** The wait and run timings of one source. @internal */
export class SourceTimings {
  readonly wait: Recorder = new LogTiming();
  readonly run: Recorder = new LogTiming();
}

/** The timings of one worker (its counters are the core's); each source keeps its own too. @internal */
export class Metrics {
  readonly wait = new Timing();
  readonly run = new Timing();

  /**
   * Times a sampled job's wait (first attempt) and marks the start of its run, at `now`. Until a
   * job settles its `value` field is free, so a sampled job carries its add time and then its
   * start time there: no map, and no extra field on every job.
   */
  sampleStart(job: JobRecord, now: number): void {
    const addedAt = job.value;
    if (typeof addedAt === 'number' && job.attempts === 1) {
      // Waiting starts when the job is due: at add, or at its due time for a delayed job.
      const dueFor = Math.max(0, job.dueAt === UNTIMED ? now - addedAt : Math.min(now - addedAt, now - job.dueAt));
      this.wait.record(dueFor);
      job.home.sampledTimings().wait.record(dueFor);
    }
    job.value = now;
    job.home.pruneSamples();
  }

  /** Times a sampled job's run, which ended at `now`. */
  sampleEnd(job: JobRecord, now: number): void {
    const ms = now - (job.value as number);
    this.run.record(ms);
    job.home.sampledTimings().run.record(ms);
    job.value = undefined;
  }
}

/** Histograms take integers >= 1: we record microseconds. */
function toMicros(ms: number): number {
  return Math.max(1, Math.round(ms * 1000));
}

function noTiming(): TimingStats {
  return { count: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0, sum: 0 };
}

function summarise(histogram: RecordableHistogram, sumMs: number): TimingStats {
  const count = histogram.count;
  if (count === 0) return noTiming();
  const ms = (micros: number): number => Math.round(micros) / 1000;
  return {
    count,
    mean: ms(histogram.mean),
    p50: ms(histogram.percentile(50)),
    p90: ms(histogram.percentile(90)),
    p99: ms(histogram.percentile(99)),
    max: ms(histogram.max),
    sum: ms(sumMs * 1000),
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
    waiting: core.waiting,
    delayed: core.delayed,
    counters: { ...core.counters },
    oldestDueAgeMs: oldest,
    sources,
    waitTime: metrics.wait.summary(),
    runTime: metrics.run.summary(),
    sampleEvery: SAMPLE_EVERY,
  };
}
