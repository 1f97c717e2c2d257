import type { TimingStats } from '../api/stats.js';
import { isSampled, SAMPLE_EVERY, Timed, TIMED_IN_FULL_PER_SECOND } from '../core/sampling.js';
import { type CoreJob, type JobHome, State, UNTIMED } from '../core/job-record.js';

/** The length of the window {@link TIMED_IN_FULL_PER_SECOND} counts in, ms. */
const FULL_WINDOW_MS = 1000;

/**
 * Which jobs a worker times, decided at add: every job while fewer than
 * {@link TIMED_IN_FULL_PER_SECOND} have been timed in full in the current second (marked on the
 * job, weight 1), else the jobs {@link isSampled} picks (weight {@link SAMPLE_EVERY}). A busy
 * worker pays one comparison per add over the sampling of before; the window moves on whenever
 * an add reads the clock for its own reasons (a sampled job, the first of a tick of adds), never on a
 * reading of its own.
 *
 * @internal
 */
export class Sampler {
  #budget = TIMED_IN_FULL_PER_SECOND;
  #windowEnd = Number.NEGATIVE_INFINITY;

  /** How `job`, being added, is timed: in full while the budget lasts (the core marks it so at its admission). */
  pick(job: CoreJob): Timed {
    if (this.#budget > 0) {
      this.#budget--;
      return Timed.InFull;
    }
    return isSampled(job.seq) ? Timed.Sampled : Timed.No;
  }

  /** An add read the clock: `now` (monotonic ms). A new second gives a new budget. */
  saw(now: number): void {
    if (now >= this.#windowEnd) {
      this.#windowEnd = now + FULL_WINDOW_MS;
      this.#budget = TIMED_IN_FULL_PER_SECOND;
    }
  }
}

/** How many jobs the timing of `job` stands for. */
function weightOf(job: CoreJob): number {
  return job.timedInFull ? 1 : SAMPLE_EVERY;
}

/**
 * Bits of a value's mantissa that pick its bucket within its power of two: 512 buckets per
 * octave, each at most 0.2 % wide (1/512 of the octave's lower end).
 */
const BUCKET_BITS = 9;
/** Reads a double's high 32 bits (sign, exponent, the top of the mantissa): the bucket of a value. */
const bucketView = new Float64Array(1);
const bucketBits = new Uint32Array(bucketView.buffer);
/** Which half of {@link bucketBits} holds the exponent: the high word of the double. */
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/**
 * The bucket of `micros` (a positive number): its exponent and the top {@link BUCKET_BITS} bits of
 * its mantissa, read off the double itself. Buckets grow in order with the values, like a log
 * scale, at the cost of one typed-array store and load where `Math.log` is a call into C++.
 */
function bucketOf(micros: number): number {
  bucketView[0] = micros;
  return (bucketBits[HIGH] as number) >>> (20 - BUCKET_BITS);
}

/** The middle of bucket `bucket`, the inverse of {@link bucketOf}. */
function bucketMiddle(bucket: number): number {
  const exponent = (bucket >>> BUCKET_BITS) - 1023;
  const fraction = ((bucket & ((1 << BUCKET_BITS) - 1)) + 0.5) / (1 << BUCKET_BITS);
  return 2 ** exponent * (1 + fraction);
}

/**
 * One timing over the sampled jobs, made in next to no time and memory: it counts the sampled
 * values (in microseconds) in log-spaced buckets at most 0.2 % wide, kept in a map that holds
 * only the buckets used, and keeps the exact sum, smallest and largest. A percentile is the
 * middle of its bucket, within the smallest and largest value. (A node histogram did the same
 * for the worker, but cost about 11 kB and 50 us to make, and a record cost several times one here.)
 *
 * @internal
 */
export class Timing {
  readonly #buckets = new Map<number, number>();
  #count = 0;
  /** The jobs the values stand for (a thinned sample's value counts {@link SAMPLE_EVERY} times). */
  #weight = 0;
  #weightedSumMs = 0;
  #sumMs = 0;
  #minMs = Infinity;
  #maxMs = 0;

  /** Counts a value of `ms`, standing for `weight` jobs. */
  record(ms: number, weight = 1): void {
    this.add(bucketOf(toMicros(ms)), ms, weight);
  }

  /** Counts a value of `ms` whose bucket (`bucketOf(toMicros(ms))`) is known, standing for `weight` jobs. */
  add(bucket: number, ms: number, weight: number): void {
    const buckets = this.#buckets;
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + weight);
    this.#count++;
    this.#weight += weight;
    this.#weightedSumMs += ms * weight;
    this.#sumMs += ms;
    if (ms < this.#minMs) this.#minMs = ms;
    if (ms > this.#maxMs) this.#maxMs = ms;
  }

  summary(): TimingStats {
    const count = this.#count;
    if (count === 0) return noTiming();
    const weight = this.#weight;
    const buckets = [...this.#buckets.keys()].sort((a, b) => a - b);
    const percentile = (p: number): number => {
      const rank = Math.max(1, Math.ceil((p / 100) * weight));
      let seen = 0;
      for (const bucket of buckets) {
        seen += this.#buckets.get(bucket) as number;
        if (seen >= rank) return Math.min(this.#maxMs, Math.max(this.#minMs, bucketMiddle(bucket) / 1000));
      }
      return this.#maxMs;
    };
    const ms = (value: number): number => Math.round(value * 1000) / 1000;
    return {
      count,
      mean: ms(this.#weightedSumMs / weight),
      p50: ms(percentile(50)),
      p90: ms(percentile(90)),
      p99: ms(percentile(99)),
      max: ms(this.#maxMs),
      sum: ms(this.#sumMs),
    };
  }
}

/** Counts a sampled value of `ms` in the worker's timing and its source's, finding its bucket once. */
function recordBoth(worker: Timing, source: Timing, ms: number, weight: number): void {
  const bucket = bucketOf(toMicros(ms));
  worker.add(bucket, ms, weight);
  source.add(bucket, ms, weight);
}

/** A job's source as the timings see it: the public `Source`, which keeps its {@link SourceTimings}. @internal */
export interface TimedHome extends JobHome {
  sampledTimings(): SourceTimings;
}

/** The wait and run timings of one source. @internal */
export class SourceTimings {
  readonly wait = new Timing();
  readonly run = new Timing();
}

/**
 * The two timing histograms of one worker (its counters are the core's). Nothing of the timing
 * lives on the job record: the add time of a sampled job waits in its source
 * (`WaitAges.noteSampled`, `core/sampled-adds.ts`), which lets go of it when it starts, and the
 * start time of its attempt is held by the shell while the handler runs (a local, or the
 * job's `Awaiter`). A map of running sampled jobs did the same, but an object as a map key costs
 * a hash of its own, and it cost more than the rest of the sample together.
 *
 * @internal
 */
export class Metrics {
  readonly wait = new Timing();
  readonly run = new Timing();

  /**
   * A sampled job starts at `now`, added at `addedAt` (its first attempt, the add time its lane
   * kept: see `Core.takeAddTime`) or `undefined` (a retry, or none kept): times its wait. Called
   * for sampled jobs only (see {@link isSampled}); the shell holds the start time until
   * {@link sampleEnd}.
   */
  sampleStart(job: CoreJob, now: number, addedAt: number | undefined): void {
    if (addedAt === undefined) return;
    // Waiting starts when the job is due: at add, or at its due time for a delayed job.
    const dueFor = Math.max(0, job.dueAt === UNTIMED ? now - addedAt : Math.min(now - addedAt, now - job.dueAt));
    recordBoth(this.wait, (job.home as TimedHome).sampledTimings().wait, dueFor, weightOf(job));
  }

  /**
   * The handler of a sampled job's attempt that started at `startedAt` settled at `now`: times
   * its run, unless the job was settled meanwhile (cancelled, timed out for good), whose run
   * ended for its handle before the handler did. (A job runs one attempt at a time: after a
   * timeout its retry waits for the handler to settle.)
   */
  sampleEnd(job: CoreJob, startedAt: number, now: number): void {
    if (job.state !== State.Running) return;
    recordBoth(this.run, (job.home as TimedHome).sampledTimings().run, now - startedAt, weightOf(job));
  }
}

/** Timings count whole microseconds, at least 1. */
function toMicros(ms: number): number {
  return Math.max(1, Math.round(ms * 1000));
}

/** The summary of a timing with no value yet. @internal */
export function noTiming(): TimingStats {
  return { count: 0, mean: null, p50: null, p90: null, p99: null, max: null, sum: 0 };
}
