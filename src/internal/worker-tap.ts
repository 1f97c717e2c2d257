import type { JobRecord } from '../handles/job.js';

/**
 * What an integration (`qmux/otel`) hooks into a worker's shell: told of each job as it is
 * created, synchronously inside the call that adds it (so in the adder's async context), and
 * given each attempt's handler to call. A worker without a tap pays one null check per add and
 * per attempt.
 *
 * @internal
 */
export interface WorkerTap {
  /** A job was created by an add, a publish or a redrive, in the caller's context. */
  added(job: JobRecord): void;
  /** Runs one attempt: calls `handler(job)` (wrapped as the tap likes) and returns what it returned; may throw what it threw. */
  run(job: JobRecord, handler: (job: never) => unknown): unknown;
}
