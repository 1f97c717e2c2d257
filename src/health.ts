import type { WorkerStatus } from './worker.js';

/**
 * What `worker.health()` returns.
 *
 * @example
 * ```ts
 * const { status, reason } = worker.health();
 * if (status !== 'healthy') console.warn(worker.name, status, reason);
 * ```
 */
export interface WorkerHealth {
  /** `healthy`; `degraded` (working, but something keeps going wrong, such as thread crashes); `halted` (fail-stopped). */
  status: 'healthy' | 'degraded' | 'halted';
  /** Why it is not healthy. */
  reason?: string;
  /** The error that halted it or made it degraded. */
  error?: unknown;
  /** The worker's status at the time. */
  workerStatus: WorkerStatus;
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
    return count >= CRASHES_TO_DEGRADE
      ? `${count} worker-thread crashes in the last ${CRASH_WINDOW_MS / 1000} s`
      : undefined;
  }

  #count(now: number): number {
    if (this.#times.length > 0 && (this.#times[0] as number) <= now - CRASH_WINDOW_MS) {
      this.#times = this.#times.filter((at) => at > now - CRASH_WINDOW_MS);
    }
    return this.#times.length;
  }
}
