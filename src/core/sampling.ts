import type { CoreJob } from './job-record.js';

/** `log2` of {@link SAMPLE_EVERY}. @internal */
export const SAMPLE_BITS = 6;

/**
 * Once a worker has timed {@link TIMED_IN_FULL_PER_SECOND} jobs in a second, it times about one
 * job in this many, each standing for this many, so that measuring costs next to nothing on a
 * busy worker's hot path; percentiles over a sample this size are as good as over all (see
 * {@link isSampled} for which jobs).
 */
export const SAMPLE_EVERY = 1 << SAMPLE_BITS;

/**
 * How many jobs added in one second a worker times as themselves (SPEC 11: right percentiles at
 * any volume): a quiet worker times every job; past this, one job in {@link SAMPLE_EVERY}.
 */
export const TIMED_IN_FULL_PER_SECOND = 256;

/**
 * Whether the job of add order `seq` is timed. The top bits of `(seq - 1)` times 2^32 / φ
 * (Fibonacci hashing) pick one job in {@link SAMPLE_EVERY}, 34 to 89 apart, spread evenly but
 * out of step with any period: jobs added in a pattern (every other one to another queue, a big
 * one every 64th) are sampled in proportion to the pattern, where `seq % 64 === 0` would always
 * land on the same place in it. The process's first job is one (so a short run shows a timing).
 * Nothing is stored to remember the choice: every point that times a job asks again.
 *
 * @internal
 */
export function isSampled(seq: number): boolean {
  return Math.imul(seq - 1, 0x9e3779b9) >>> (32 - SAMPLE_BITS) === 0;
}

/** Whether `job` is timed (see `Sampler` in `observe/timings.ts`): asked again wherever a timing is taken. @internal */
export function isTimed(job: CoreJob): boolean {
  return job.timedInFull || isSampled(job.seq);
}

/** How an admitted job is timed, as the shell's sampler decided at its add (see `Sampler` in `observe/timings.ts`). @internal */
export const enum Timed {
  /** Not timed. */
  No = 0,
  /** Timed as itself (weight 1): marked on the job. */
  InFull = 1,
  /** Timed as one of a sample (`isSampled(seq)`, weight {@link SAMPLE_EVERY}). */
  Sampled = 2,
}
