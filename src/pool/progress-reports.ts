import type { BroadcastChannel } from 'node:worker_threads';
import type { JobProgress, JobRecord } from '../handles/job.js';
import { MAX_THREADS } from './thread-options.js';
import type { ProgressReport } from './thread-entry.js';

/**
 * The channel a thread pool's threads send `ctx.updateProgress` reports on, and their
 * acknowledgement. It reads the pool's cell tables (the same arrays the pool writes as it hands
 * out tasks), so that a report finds its job without a lookup of its own.
 *
 * @internal
 */
export class ProgressReports {
  /** The channel's name, which every thread is given (`ThreadWorkerData.reports`). */
  readonly name = `qmux-progress-${globalThis.crypto.randomUUID()}`;
  /** Open while the pool is. */
  #channel: BroadcastChannel | undefined = undefined;
  readonly #shared: Int32Array;
  readonly #jobAt: readonly (JobRecord | undefined)[];
  readonly #taskAt: readonly number[];
  readonly #onProgress: (job: JobRecord, value: JobProgress) => void;
  readonly #onReport = (event: unknown): void => this.#record((event as { data: ProgressReport }).data);

  /**
   * @param shared - the pool's shared memory: its third part holds, per cell, how many reports of its task were recorded
   * @param jobAt - per cell, the job whose task it holds
   * @param taskAt - per cell, the number of the task it holds
   * @param onProgress - records a report (the worker checks that the job still runs)
   */
  constructor(
    shared: Int32Array,
    jobAt: readonly (JobRecord | undefined)[],
    taskAt: readonly number[],
    onProgress: (job: JobRecord, value: JobProgress) => void,
  ) {
    this.#shared = shared;
    this.#jobAt = jobAt;
    this.#taskAt = taskAt;
    this.#onProgress = onProgress;
  }

  /** Opens the channel, unless it is open. */
  open(): void {
    if (this.#channel !== undefined) return;
    // The global one (Node >= 18) is node:worker_threads' BroadcastChannel, without importing it.
    const reports = new globalThis.BroadcastChannel(this.name) as BroadcastChannel;
    reports.onmessage = this.#onReport;
    reports.unref(); // a running task keeps the process alive, not the channel
    this.#channel = reports;
  }

  /** Closes the channel; the next `open` makes a new one. */
  close(): void {
    this.#channel?.close();
    this.#channel = undefined;
  }

  /**
   * A thread's `ctx.updateProgress`: recorded (the worker checks that the job still runs), then
   * acknowledged in shared memory. The thread's task returns only once every report it sent is
   * acknowledged, so each one is recorded before its job settles, although reports and results
   * travel on different channels. A report of a task that is no longer the cell's (a thread
   * ended by an abort may still have one in flight, even when the cell now holds the job's next
   * attempt) is dropped, and acknowledges nothing.
   */
  #record(report: ProgressReport): void {
    const job = this.#jobAt[report.cell];
    if (job === undefined || this.#taskAt[report.cell] !== report.seq) return;
    try {
      this.#onProgress(job, report.value as JobProgress);
    } finally {
      const index = 2 * MAX_THREADS + report.cell;
      Atomics.store(this.#shared, index, report.n);
      Atomics.notify(this.#shared, index);
    }
  }
}
