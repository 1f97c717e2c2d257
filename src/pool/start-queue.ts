import type { kQueueOptions, Task, TaskQueue } from 'tinypool';
import type { JobRecord } from '../handles/job.js';

/**
 * tinypool's queue of tasks handed over while no thread was ready to take them (qmux never hands
 * over more tasks than there are threads, so they wait only for threads that are starting). It is
 * ours, not tinypool's default, so that a task can be taken back out: tinypool 2.2 leaves a queued
 * task there for good when the thread meant for it dies while starting, and a job whose thread
 * never finishes starting must still end at its timeout or cancel (see `ThreadPool.abort`).
 *
 * @internal
 */
export class StartQueue implements TaskQueue {
  readonly #tasks: Task[] = [];
  /** tinypool's `kQueueOptions`, the key each task holds its job under (see `ThreadPool.run`). */
  readonly #jobKey: typeof kQueueOptions;

  /** @param jobKey - tinypool's `kQueueOptions`: this module does not load tinypool itself */
  constructor(jobKey: typeof kQueueOptions) {
    this.#jobKey = jobKey;
  }

  get size(): number {
    return this.#tasks.length;
  }

  shift(): Task | null {
    return this.#tasks.shift() ?? null;
  }

  push(task: Task): void {
    this.#tasks.push(task);
  }

  remove(task: Task): void {
    const index = this.#tasks.indexOf(task);
    if (index >= 0) this.#tasks.splice(index, 1);
  }

  cancel(): void {
    for (const task of this.#tasks.splice(0)) task.cancel();
  }

  /** Takes out the task of `job`, if it is still waiting here. */
  take(job: JobRecord): Task | undefined {
    const index = this.#tasks.findIndex((task) => task[this.#jobKey] === job);
    return index < 0 ? undefined : this.#tasks.splice(index, 1)[0];
  }

  /** The job whose task `task` is. */
  jobOf(task: Task): JobRecord {
    return task[this.#jobKey] as JobRecord;
  }
}
