import type { WorkerCounters } from '../api/stats.js';

/** A fresh set of counters, all zero. @internal */
export function zeroCounters(): WorkerCounters {
  return { added: 0, started: 0, succeeded: 0, failed: 0, retried: 0, dead: 0, cancelled: 0, deduplicated: 0 };
}
