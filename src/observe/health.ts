import type { InvariantError } from '../api/errors.js';
import type { WorkerStatus } from '../api/worker-status.js';

/**
 * What `worker.health()` returns: `healthy`; `degraded` (working, but something keeps going
 * wrong, such as thread crashes); or `halted` (fail-stopped on a broken invariant). Narrowing on
 * `status` gives the `reason` and `error` of the unhealthy cases.
 *
 * @example
 * ```ts
 * const health = worker.health();
 * if (health.status === 'halted') console.error(worker.name, health.reason, health.error.invariant);
 * ```
 */
export type WorkerHealth = HealthyWorker | DegradedWorker | HaltedWorker;

/** A worker with nothing wrong. */
export interface HealthyWorker {
  /** `'healthy'`. */
  status: 'healthy';
  /** The worker's status at the time. */
  workerStatus: WorkerStatus;
  /** Nothing is wrong. */
  reason?: undefined;
  /** Nothing is wrong. */
  error?: undefined;
}

/** A worker that keeps working while something keeps going wrong: repeated thread crashes, or a remote source that cannot reach its engine. */
export interface DegradedWorker {
  /** `'degraded'`. */
  status: 'degraded';
  /** The worker's status at the time. */
  workerStatus: WorkerStatus;
  /** Why, in words. */
  reason: string;
  /** The latest error behind it: a thread crash, or the remote source's `RemoteSourceError`. */
  error: unknown;
}

/** A worker that fail-stopped on a broken invariant; `start()` recovers. */
export interface HaltedWorker {
  /** `'halted'`. */
  status: 'halted';
  /** `'halted'`. */
  workerStatus: 'halted';
  /** The error's message. */
  reason: string;
  /** The broken invariant. */
  error: InvariantError;
}

/** Thread crashes within this window that make a threads worker `degraded`. */
const CRASH_WINDOW_MS = 60_000;
const CRASHES_TO_DEGRADE = 3;

/**
 * Recent thread crashes: a worker is degraded while {@link CRASHES_TO_DEGRADE} or more happened
 * in the last {@link CRASH_WINDOW_MS}, and healthy again once they age out.
 *
 * @internal
 */
export class CrashWindow {
  #times: number[] = [];
  /** The latest crash's error. */
  last: unknown = undefined;

  /** Records a crash at `now`; true when this one makes the worker degraded. */
  note(error: unknown, now: number): boolean {
    const before = this.#count(now);
    this.#times.push(now);
    this.last = error;
    return before + 1 === CRASHES_TO_DEGRADE;
  }

  /** Why the worker is degraded at `now`, or `undefined` when it is not. */
  degradedReason(now: number): string | undefined {
    const count = this.#count(now);
    return count >= CRASHES_TO_DEGRADE ? `${count} worker-thread crashes in the last ${CRASH_WINDOW_MS / 1000} s` : undefined;
  }

  #count(now: number): number {
    if (this.#times.length > 0 && (this.#times[0] as number) <= now - CRASH_WINDOW_MS) {
      this.#times = this.#times.filter((at) => at > now - CRASH_WINDOW_MS);
    }
    return this.#times.length;
  }
}
