import type { WorkerHealth } from './health.js';
import type { TimingStats, WorkerCounters, WorkerStats } from '../api/stats.js';
import { SAMPLE_EVERY, TIMED_IN_FULL_PER_SECOND } from '../core/sampling.js';
import type { WorkerStatus } from '../api/worker-status.js';

/** What the text is made of, per worker: its stats and its health, read at one instant. @internal */
export interface WorkerReading {
  stats: WorkerStats;
  health: WorkerHealth['status'];
}

/** The content type of {@link renderMetrics}' text, as a scraper expects it. @internal */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const COUNTERS: readonly [name: string, field: keyof WorkerCounters, help: string][] = [
  ['qmux_jobs_added_total', 'added', 'Jobs added to the source (a retry is not a new job; a de-duplicated add is not counted).'],
  ['qmux_jobs_started_total', 'started', 'Attempts started: a job retried twice counts three.'],
  ['qmux_jobs_succeeded_total', 'succeeded', 'Jobs that succeeded.'],
  ['qmux_jobs_failed_total', 'failed', 'Jobs that failed for good (their last attempt failed, or retryIf said no).'],
  ['qmux_jobs_retried_total', 'retried', 'Failed attempts that were retried.'],
  ['qmux_jobs_cancelled_total', 'cancelled', 'Jobs cancelled, waiting or running (handle, signal, purge, shutdown).'],
  ['qmux_jobs_deduplicated_total', 'deduplicated', 'Adds that returned the handle of a job already in use with the same id.'],
  ['qmux_jobs_dead_total', 'dead', 'Jobs that failed for good and were kept as dead letters.'],
];

const STATUSES: readonly WorkerStatus[] = ['initiated', 'idle', 'running', 'pausing', 'paused', 'stopping', 'stopped', 'halted'];
const HEALTHS: readonly WorkerHealth['status'][] = ['healthy', 'degraded', 'halted'];
const QUANTILES = [
  ['0.5', 'p50'],
  ['0.9', 'p90'],
  ['0.99', 'p99'],
] as const;

const SAMPLED = `over the sampled jobs (every job up to ${TIMED_IN_FULL_PER_SECOND} added a second, then one job in ${SAMPLE_EVERY}, weighted in the quantiles): _count and _sum count those, not every job`;

/**
 * The Prometheus text exposition format (0.0.4) of `workers` (SPEC 11): every family with its
 * HELP and TYPE, one series per bound source even at zero, labels `worker`, `source` and the
 * state of a state set, never a job id or a key.
 *
 * @internal
 */
export function renderMetrics(workers: readonly WorkerReading[]): string {
  const out: string[] = [];
  const perSource = (write: (worker: string, source: string, stats: WorkerStats) => void): void => {
    for (const { stats } of workers) for (const source of Object.keys(stats.sources)) write(stats.name, source, stats);
  };

  for (const [name, field, help] of COUNTERS) {
    family(out, name, 'counter', help);
    perSource((worker, source, stats) => sample(out, name, { worker, source }, stats.sources[source]?.counters[field] ?? 0));
  }

  family(out, 'qmux_jobs_waiting', 'gauge', 'Jobs waiting in the source, by state: due (may start now) or delayed (not due yet).');
  perSource((worker, source, stats) => {
    const s = stats.sources[source];
    sample(out, 'qmux_jobs_waiting', { worker, source, state: 'due' }, s?.due ?? 0);
    sample(out, 'qmux_jobs_waiting', { worker, source, state: 'delayed' }, s?.delayed ?? 0);
  });
  family(out, 'qmux_jobs_running', 'gauge', 'Jobs of the source running now.');
  perSource((worker, source, stats) => sample(out, 'qmux_jobs_running', { worker, source }, stats.sources[source]?.running ?? 0));

  family(out, 'qmux_worker_slots_in_use', 'gauge', 'Slots in use: attempts whose handler has not settled yet.');
  for (const { stats } of workers) sample(out, 'qmux_worker_slots_in_use', { worker: stats.name }, stats.running);
  family(out, 'qmux_worker_concurrency', 'gauge', 'Most attempts the worker runs at once (+Inf when unbounded).');
  for (const { stats } of workers) sample(out, 'qmux_worker_concurrency', { worker: stats.name }, stats.concurrency);
  family(out, 'qmux_worker_status', 'gauge', "The worker's status as a state set: 1 for the current status, 0 for every other.");
  for (const { stats } of workers) {
    for (const status of STATUSES) sample(out, 'qmux_worker_status', { worker: stats.name, status }, status === stats.status ? 1 : 0);
  }
  family(out, 'qmux_worker_health', 'gauge', "The worker's health as a state set: 1 for the current health, 0 for every other.");
  for (const { stats, health } of workers) {
    for (const state of HEALTHS) sample(out, 'qmux_worker_health', { worker: stats.name, health: state }, state === health ? 1 : 0);
  }

  const summaries = [
    ['qmux_job_wait_seconds', 'waitTime', `Seconds from add (or from becoming due) to the start of the first attempt, ${SAMPLED}.`],
    ['qmux_job_run_seconds', 'runTime', `Seconds from the start of an attempt to its handler settling, ${SAMPLED}.`],
  ] as const;
  for (const [name, field, help] of summaries) {
    family(out, name, 'summary', help);
    perSource((worker, source, stats) => {
      const timing = stats.sources[source]?.[field] as TimingStats;
      for (const [quantile, key] of QUANTILES) {
        // No observation, no quantile: NaN, as Prometheus' own client libraries write it.
        sample(out, name, { worker, source, quantile }, timing.count === 0 ? Number.NaN : (timing[key] as number) / 1000);
      }
      sample(out, `${name}_sum`, { worker, source }, timing.sum / 1000);
      sample(out, `${name}_count`, { worker, source }, timing.count);
    });
  }
  return out.join('');
}

function family(out: string[], name: string, type: 'counter' | 'gauge' | 'summary', help: string): void {
  out.push(`# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} ${type}\n`);
}

function sample(out: string[], name: string, labels: Record<string, string>, value: number): void {
  let text = '';
  for (const label of Object.keys(labels)) {
    text += `${text === '' ? '' : ','}${label}="${escapeLabel(labels[label] as string)}"`;
  }
  out.push(`${name}{${text}} ${formatValue(value)}\n`);
}

/** A label value in the text format: backslash, double quote and line feed escaped. */
function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (ch) => (ch === '\n' ? '\\n' : `\\${ch}`));
}

function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return Number.isNaN(value) ? 'NaN' : String(value);
}
