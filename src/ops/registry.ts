import { setEntry } from '../internal/entry.js';
import * as check from '../internal/validate.js';
import { renderMetrics, type WorkerReading } from '../observe/metrics.js';
import type { WorkerStats } from '../api/stats.js';
import type { Worker, WorkerHealth } from '../shell/worker.js';

/** What `registry.health()` returns: the worst status of the workers, and each one's health. */
export interface RegistryHealth {
  /** `halted` if any worker is, else `degraded` if any is, else `healthy`. */
  status: WorkerHealth['status'];
  /** Each worker's health, by name. */
  workers: Record<string, WorkerHealth>;
}

/** What `registry.stats()` returns. */
export interface RegistryStats {
  /** Each worker's stats, by name. */
  workers: Record<string, WorkerStats>;
}

/** What `registry.shutdown()` resolves to. */
export interface ShutdownResult {
  /** Workers whose running jobs all settled before the timeout. */
  stopped: string[];
  /** Workers that still had running jobs at the timeout; those jobs were cancelled (their signals aborted). */
  unfinished: string[];
}

/** Options of `registry.shutdown()`. */
export interface ShutdownOptions {
  /** Most ms to wait for running jobs (a finite number >= 0). Default: wait as long as it takes. */
  timeout?: number;
}

const RANK = { healthy: 0, degraded: 1, halted: 2 } as const;

/** Sets a registry's watcher (see {@link watchRegistry}); assigned by the class's static block. */
let setWatcher: (registry: Registry, watcher: RegistryWatcher | null) => RegistryWatcher | null;

/** What {@link watchRegistry} calls with each worker added. @internal */
export type RegistryWatcher = (worker: Worker<never, unknown>) => void;

/**
 * Calls `watcher` with each worker added to `registry` from now on (or stops with `null`),
 * returning the watcher it had: how `qmux/otel` instruments the workers a registry gains after
 * `instrument(registry)`.
 *
 * @internal
 */
export function watchRegistry(registry: Registry, watcher: RegistryWatcher | null): RegistryWatcher | null {
  return setWatcher(registry, watcher);
}

/**
 * The workers of one process, by name: one place to ask for health and to shut everything down.
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * registry.add(mailer);
 * registry.add(thumbnails);
 * for (const signal of ['SIGINT', 'SIGTERM'] as const) {
 *   process.once(signal, async () => {
 *     const { unfinished } = await registry.shutdown({ timeout: 10_000 });
 *     process.exitCode = unfinished.length === 0 ? 0 : 1;
 *   });
 * }
 * ```
 */
export class Registry {
  readonly #workers = new Map<string, Worker<never, unknown>>();
  #watcher: RegistryWatcher | null = null;

  static {
    setWatcher = (registry, watcher) => {
      const previous = registry.#watcher;
      registry.#watcher = watcher;
      return previous;
    };
  }

  /**
   * Adds a worker (of any job types). Throws a `TypeError` if one with the same name is already
   * registered, or if its name is `.` or `..` (a URL path drops those, so the admin API could not name it).
   */
  add<T, R>(worker: Worker<T, R>): this {
    if (worker === null || typeof worker !== 'object' || typeof worker.health !== 'function') {
      throw new TypeError(`qmux: registry.add(worker) needs a Worker, got ${check.describeValue(worker)}`);
    }
    if (worker.name === '.' || worker.name === '..') {
      // URLs drop these as path segments, even spelled %2E: the admin API could not name the worker.
      throw new TypeError(
        `qmux: registry.add(worker): a worker named "${worker.name}" cannot be named in a URL path, where the admin API names workers; give it another \`name\``,
      );
    }
    if (this.#workers.has(worker.name)) {
      throw new TypeError(
        `qmux: registry.add(worker): a worker named "${worker.name}" is already registered; give workers distinct \`name\` options`,
      );
    }
    this.#workers.set(worker.name, worker as unknown as Worker<never, unknown>);
    this.#watcher?.(worker as unknown as Worker<never, unknown>);
    return this;
  }

  /**
   * The worker named `name`, or `undefined`. Its job types are not known here: it is typed to
   * start, stop, watch and tune, but not to add jobs to (`T` is `never`). Keep your own typed
   * reference for adding, or cast when you know the types: `as unknown as Worker<Mail, void>`.
   * A helper that takes any worker is generic: `<T, R>(worker: Worker<T, R>) => ...`.
   */
  get(name: string): Worker<never, unknown> | undefined {
    return this.#workers.get(name);
  }

  /** Names of the registered workers, in the order they were added. */
  names(): string[] {
    return [...this.#workers.keys()];
  }

  /** Every worker's health, and the worst of them. */
  health(): RegistryHealth {
    const workers: Record<string, WorkerHealth> = {};
    let status: WorkerHealth['status'] = 'healthy';
    for (const [name, worker] of this.#workers) {
      const health = worker.health();
      setEntry(workers, name, health);
      if (RANK[health.status] > RANK[status]) status = health.status;
    }
    return { status, workers };
  }

  /** Every worker's `stats()`, by name. */
  stats(): RegistryStats {
    const workers: Record<string, WorkerStats> = {};
    for (const [name, worker] of this.#workers) setEntry(workers, name, worker.stats());
    return { workers };
  }

  /**
   * Every worker's figures in the Prometheus text exposition format (version 0.0.4), to serve
   * to a scraper (the admin handler does, at `GET /metrics`, with the content type
   * `text/plain; version=0.0.4; charset=utf-8`). Per worker and bound source: counters
   * `qmux_jobs_{added,started,succeeded,failed,retried,cancelled,deduplicated,dead}_total`, gauges
   * `qmux_jobs_waiting{state="due"|"delayed"}` and `qmux_jobs_running`, summaries
   * `qmux_job_wait_seconds` and `qmux_job_run_seconds` (over the sampled jobs); per worker,
   * `qmux_worker_slots_in_use`, `qmux_worker_concurrency` and the state sets `qmux_worker_status`
   * and `qmux_worker_health`. Labels are `worker` and `source` (never a job id or a key).
   *
   * @example
   * ```ts
   * // Next to prom-client's metrics, in one handler:
   * res.setHeader('content-type', 'text/plain; version=0.0.4; charset=utf-8');
   * res.end((await register.metrics()) + registry.metrics());
   * ```
   */
  metrics(): string {
    const readings: WorkerReading[] = [];
    for (const worker of this.#workers.values()) readings.push({ stats: worker.stats(), health: worker.health().status });
    return renderMetrics(readings);
  }

  /**
   * Stops every worker and resolves once their running jobs have settled or, at the latest, at
   * `timeout`, when the jobs still running are cancelled (their signals abort). Waiting jobs stay
   * queued. Once under way it never rejects, whatever the workers do: a worker that cannot stop is
   * reported in `unfinished`. It rejects only on bad options, before stopping anything: with a
   * `TypeError` when `options` is not an object, has a field other than `timeout`, or `timeout`
   * is not a number, a `RangeError` when `timeout` is negative, not finite or longer than a timer can wait (about 24.8 days).
   */
  async shutdown(options?: ShutdownOptions): Promise<ShutdownResult> {
    check.optionsObject('shutdown options', options);
    // A misspelt `timeout` would otherwise wait for ever.
    if (options !== undefined) check.knownFields('shutdown options', options, SHUTDOWN_FIELDS);
    const timeout =
      options?.timeout === undefined
        ? Infinity
        : check.timerMs('shutdown option "timeout"', check.nonNegativeMs('shutdown option "timeout"', options.timeout));
    const pending = new Map<string, Promise<void>>();
    for (const [name, worker] of this.#workers) pending.set(name, stopQuietly(worker));
    const finished = new Set<string>();
    const all = Promise.all([...pending].map(([name, stopped]) => stopped.then(() => void finished.add(name))));
    if (timeout === Infinity) {
      await all;
    } else {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeout)))]);
      clearTimeout(timer);
    }
    const result: ShutdownResult = { stopped: [], unfinished: [] };
    for (const [name, worker] of this.#workers) {
      if (finished.has(name)) {
        result.stopped.push(name);
      } else {
        result.unfinished.push(name);
        worker.cancelRunning('shutdown timeout');
      }
    }
    return result;
  }
}

const SHUTDOWN_FIELDS = ['timeout'] as const;

/** `stop()` that cannot reject, whatever a worker's state. */
function stopQuietly(worker: Worker<never, unknown>): Promise<void> {
  return worker.stop().catch(() => undefined);
}
