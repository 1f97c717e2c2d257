/**
 * registry.metrics() and GET /metrics (SPEC 11): the Prometheus text exposition format 0.0.4,
 * read back with a real text-format parser (parse-prometheus-text-format, a port of Prometheus'
 * own parser) and checked against stats(). Fake timers, so every timing is exact virtual time.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SAMPLE_EVERY } from '../src/core/sampling.js';
import { createAdminHandler, Registry, Worker, type Job, type SourceView, type Strategy, type WorkerStats } from '../src/index.js';
import { sleep, useVirtualTime } from './helpers.js';
import { closeServer } from './support/http-server.js';

const T0 = Date.UTC(2030, 0, 1);

useVirtualTime(T0);

const COUNTERS = {
  qmux_jobs_added_total: 'added',
  qmux_jobs_started_total: 'started',
  qmux_jobs_succeeded_total: 'succeeded',
  qmux_jobs_failed_total: 'failed',
  qmux_jobs_retried_total: 'retried',
  qmux_jobs_cancelled_total: 'cancelled',
  qmux_jobs_deduplicated_total: 'deduplicated',
  qmux_jobs_dead_total: 'dead',
} as const;

const FAMILIES: Record<string, ParsedFamily['type']> = {
  ...Object.fromEntries(Object.keys(COUNTERS).map((name) => [name, 'COUNTER' as const])),
  qmux_jobs_waiting: 'GAUGE',
  qmux_jobs_running: 'GAUGE',
  qmux_worker_slots_in_use: 'GAUGE',
  qmux_worker_concurrency: 'GAUGE',
  qmux_worker_status: 'GAUGE',
  qmux_worker_health: 'GAUGE',
  qmux_job_wait_seconds: 'SUMMARY',
  qmux_job_run_seconds: 'SUMMARY',
};

const STATUSES = ['initiated', 'idle', 'running', 'pausing', 'paused', 'stopping', 'stopped', 'halted'];
const HEALTHS = ['healthy', 'degraded', 'halted'];

/** The families of a text by name, and the text. */
type Families = Map<string, ParsedFamily> & { text: string };

/** Parses the text and indexes the families by name; fails on a family listed twice. */
function parse(text: string): Families {
  const families = Object.assign(new Map<string, ParsedFamily>(), { text });
  for (const family of parsePrometheusTextFormat(text)) {
    expect(families.has(family.name), `family ${family.name} appears twice`).toBe(false);
    families.set(family.name, family);
  }
  return families;
}

/**
 * One series of the summary `name`: its quantiles, sum and count. The parser folds every series
 * of a summary family into one (it reads unlabelled summaries only; labelled `_sum` lines are
 * its open issue #13), so the family is read again typed `untyped`: then every line is a sample
 * of its own, with its labels.
 */
function summary(text: string, name: string, labels: Record<string, string>): { quantiles: Record<string, number>; sum: number; count: number } {
  const typeLine = `# TYPE ${name} summary\n`;
  expect(text).toContain(typeLine);
  // Untyped, the lines of the family split into a family per run of one name: gather them.
  const samples = (of: string) =>
    parsePrometheusTextFormat(text.replace(typeLine, `# TYPE ${name} untyped\n`))
      .filter((family) => family.name === of)
      .flatMap((family) => family.metrics);
  const quantiles: Record<string, number> = {};
  for (const m of samples(name)) {
    const { quantile, ...rest } = m.labels ?? {};
    if (quantile !== undefined && sameLabels(rest, labels)) quantiles[quantile] = toNumber(m.value);
  }
  const one = (of: string): number => {
    const found = samples(of).filter((m) => sameLabels(m.labels ?? {}, labels));
    expect(found.length, `${of}${JSON.stringify(labels)} should appear once`).toBe(1);
    return toNumber(found[0]?.value);
  };
  return { quantiles, sum: one(`${name}_sum`), count: one(`${name}_count`) };
}

/** The one sample of `name` whose labels are exactly `labels`. */
function sample(families: Families, name: string, labels: Record<string, string>): ParsedSample {
  const family = families.get(name);
  expect(family, `family ${name}`).toBeDefined();
  const matches = (family as ParsedFamily).metrics.filter((m) => sameLabels(m.labels ?? {}, labels));
  expect(matches.length, `${name}${JSON.stringify(labels)} should appear once`).toBe(1);
  return matches[0] as ParsedSample;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

function value(families: Families, name: string, labels: Record<string, string>): number {
  return toNumber(sample(families, name, labels).value);
}

/** A sample value as the format writes it: a Go float, `+Inf`, `-Inf` or `NaN`. */
function toNumber(text: string | undefined): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** Every series of the text agrees with `stats` (a registry's stats at the same instant). */
function expectMatchesStats(families: Families, all: Record<string, WorkerStats>): void {
  for (const [worker, stats] of Object.entries(all)) {
    expect(value(families, 'qmux_worker_slots_in_use', { worker })).toBe(stats.running);
    expect(value(families, 'qmux_worker_concurrency', { worker })).toBe(stats.concurrency);
    for (const status of STATUSES) {
      expect(value(families, 'qmux_worker_status', { worker, status })).toBe(status === stats.status ? 1 : 0);
    }
    for (const [source, s] of Object.entries(stats.sources)) {
      const labels = { worker, source };
      for (const [name, field] of Object.entries(COUNTERS)) expect(value(families, name, labels), `${name}`).toBe(s.counters[field]);
      expect(value(families, 'qmux_jobs_waiting', { ...labels, state: 'due' })).toBe(s.due);
      expect(value(families, 'qmux_jobs_waiting', { ...labels, state: 'delayed' })).toBe(s.delayed);
      expect(value(families, 'qmux_jobs_running', labels)).toBe(s.running);
      for (const [name, timing] of [
        ['qmux_job_wait_seconds', s.waitTime],
        ['qmux_job_run_seconds', s.runTime],
      ] as const) {
        const series = summary(families.text, name, labels);
        expect(series.count).toBe(timing.count);
        expect(series.sum).toBeCloseTo(timing.sum / 1000, 9);
        expect(Object.keys(series.quantiles).sort()).toEqual(['0.5', '0.9', '0.99']);
        const q = series.quantiles;
        if (timing.count === 0) {
          // No observation: no quantile either (NaN, as Prometheus' own clients write it).
          expect([q['0.5'], q['0.9'], q['0.99']]).toEqual([Number.NaN, Number.NaN, Number.NaN]);
        } else {
          expect(q['0.5']).toBeCloseTo((timing.p50 as number) / 1000, 9);
          expect(q['0.9']).toBeCloseTo((timing.p90 as number) / 1000, 9);
          expect(q['0.99']).toBeCloseTo((timing.p99 as number) / 1000, 9);
        }
      }
    }
  }
}

describe('registry.metrics()', () => {
  it('has every family of SPEC 11, each with its HELP and TYPE, and nothing else', () => {
    const registry = new Registry().add(new Worker(() => undefined, { name: 'w' }));
    (registry.get('w') as Worker<never, unknown>).bindQueue({ name: 'q' });
    const text = registry.metrics();
    const families = parse(text);
    expect([...families.keys()].sort()).toEqual(Object.keys(FAMILIES).sort());
    for (const [name, type] of Object.entries(FAMILIES)) {
      const family = families.get(name) as ParsedFamily;
      expect(family.type, name).toBe(type);
      expect(family.help.length, `${name} has help`).toBeGreaterThan(10);
      // In the text itself: HELP, then TYPE, then the samples.
      const help = text.indexOf(`# HELP ${name} `);
      const typeLine = text.indexOf(`# TYPE ${name} ${type.toLowerCase()}\n`);
      expect(help, name).toBeGreaterThanOrEqual(0);
      expect(typeLine, name).toBeGreaterThan(help);
      expect(text.indexOf(`\n${name}{`), name).toBeGreaterThan(typeLine);
    }
    expect(families.get('qmux_jobs_started_total')?.help).toMatch(/attempt/i);
    expect(families.get('qmux_jobs_failed_total')?.help).toMatch(/for good/i);
    for (const name of ['qmux_job_wait_seconds', 'qmux_job_run_seconds']) {
      expect(families.get(name)?.help, name).toMatch(/sampled/i);
      expect(families.get(name)?.help, name).toMatch(new RegExp(`one job in ${SAMPLE_EVERY}`));
    }
    expect(text.endsWith('\n')).toBe(true);
  });

  it('agrees with stats() per worker and per source through retries, failures, cancels, delays and running jobs', async () => {
    const worker = new Worker<number, void>(
      async (job: Job<number>) => {
        await sleep(Math.abs(job.data));
        if (job.data < 0) throw new Error('negative');
      },
      { name: 'mailer', concurrency: 2, retry: { attempts: 2, backoff: { type: 'fixed', delay: 100 } } },
    );
    const other = new Worker<number, void>(() => undefined, { name: 'idle one', concurrency: Infinity, autoRun: false });
    const registry = new Registry().add(worker).add(other);
    const emails = worker.bindQueue({ name: 'emails' });
    const sms = worker.bindPriorityQueue({ name: 'sms' });
    other.bindQueue({ name: 'nothing yet' });
    const many = 4 * SAMPLE_EVERY; // enough for a few timed (sampled) jobs
    for (let i = 0; i < many; i++) emails.add(50);
    sms.add(-30, 1); // fails twice: retried, then failed for good and dead
    sms.add(20, 1);
    sms.add(20, 2).cancel('not needed');
    await vi.advanceTimersByTimeAsync((many / 2) * 50 + 1000);
    await worker.waitUntilIdle();
    emails.add(10_000); // still running at the scrape
    emails.add(10_000);
    emails.add(40); // due, waiting for a slot
    sms.add(40, 1, { delay: 60_000 }); // delayed
    await vi.advanceTimersByTimeAsync(5);

    const text = registry.metrics();
    const stats = registry.stats().workers;
    const families = parse(text);
    expectMatchesStats(families, stats);

    // And the figures themselves, so that a wrong stats() cannot hide a wrong text.
    const m = (name: string, source: string) => value(families, name, { worker: 'mailer', source });
    expect(m('qmux_jobs_added_total', 'emails')).toBe(many + 3);
    expect(m('qmux_jobs_succeeded_total', 'emails')).toBe(many);
    expect(m('qmux_jobs_started_total', 'emails')).toBe(many + 2);
    expect(m('qmux_jobs_added_total', 'sms')).toBe(4);
    expect(m('qmux_jobs_started_total', 'sms')).toBe(3); // -30 twice, 20 once
    expect(m('qmux_jobs_retried_total', 'sms')).toBe(1);
    expect(m('qmux_jobs_failed_total', 'sms')).toBe(1);
    expect(m('qmux_jobs_dead_total', 'sms')).toBe(1);
    expect(m('qmux_jobs_cancelled_total', 'sms')).toBe(1);
    expect(m('qmux_jobs_deduplicated_total', 'sms')).toBe(0);
    expect(m('qmux_jobs_running', 'emails')).toBe(2);
    expect(value(families, 'qmux_jobs_waiting', { worker: 'mailer', source: 'emails', state: 'due' })).toBe(1);
    expect(value(families, 'qmux_jobs_waiting', { worker: 'mailer', source: 'sms', state: 'delayed' })).toBe(1);
    expect(value(families, 'qmux_worker_slots_in_use', { worker: 'mailer' })).toBe(2);
    expect(value(families, 'qmux_worker_status', { worker: 'mailer', status: 'running' })).toBe(1);
    expect(value(families, 'qmux_worker_health', { worker: 'mailer', health: 'healthy' })).toBe(1);
    // About one job in SAMPLE_EVERY is sampled (by add order): the 50 ms jobs in emails give a few run samples.
    const run = summary(text, 'qmux_job_run_seconds', { worker: 'mailer', source: 'emails' });
    expect(run.count).toBeGreaterThanOrEqual(2);
    expect(run.quantiles['0.5']).toBeCloseTo(0.05, 3);
    expect(run.sum).toBeCloseTo(0.05 * run.count, 3);
    // The concurrency of the unbounded worker.
    expect(text).toContain('qmux_worker_concurrency{worker="idle one"} +Inf\n');
    expect(value(families, 'qmux_worker_concurrency', { worker: 'idle one' })).toBe(Infinity);
  });

  it('one series per bound source even at zero; a worker without sources has its worker series only', () => {
    const registry = new Registry();
    const worker = new Worker(() => undefined, { name: 'w', autoRun: false });
    const bare = new Worker(() => undefined, { name: 'bare' });
    registry.add(worker).add(bare);
    worker.bindQueue({ name: 'a' });
    worker.bindPriorityQueue({ name: 'b' });
    const families = parse(registry.metrics());
    expectMatchesStats(families, registry.stats().workers);
    for (const name of Object.keys(COUNTERS)) {
      const series = families.get(name)?.metrics ?? [];
      expect(series.map((s) => s.labels)).toEqual([
        { worker: 'w', source: 'a' },
        { worker: 'w', source: 'b' },
      ]);
      expect(series.map((s) => s.value)).toEqual(['0', '0']);
    }
    expect(families.get('qmux_jobs_waiting')?.metrics.length).toBe(4); // due and delayed per source
    for (const source of ['a', 'b']) expect(summary(families.text, 'qmux_job_wait_seconds', { worker: 'w', source }).count).toBe(0);
    expect(families.get('qmux_worker_status')?.metrics.length).toBe(2 * STATUSES.length);
    expect(families.get('qmux_worker_health')?.metrics.length).toBe(2 * HEALTHS.length);
    expect(value(families, 'qmux_worker_status', { worker: 'w', status: 'initiated' })).toBe(1);
    expect(value(families, 'qmux_worker_status', { worker: 'bare', status: 'idle' })).toBe(1);
  });

  it('an empty registry still gives every family its HELP and TYPE, with no series', () => {
    const text = new Registry().metrics();
    for (const [name, type] of Object.entries(FAMILIES)) expect(text).toContain(`# TYPE ${name} ${type.toLowerCase()}\n`);
    expect(text.split('\n').filter((line) => line.length > 0 && !line.startsWith('#'))).toEqual([]);
  });

  it('status and health are state sets: paused, stopped and halted each show as the one 1', async () => {
    let broken = false;
    const pickIneligible: Strategy = {
      name: 'PickIneligible',
      create: () => ({ pick: (list: readonly SourceView[]) => list.find((view) => view.eligible !== broken) as SourceView }),
    };
    const worker = new Worker<string, void>(() => undefined, { name: 'w', strategy: pickIneligible });
    const registry = new Registry().add(worker);
    const q = worker.bindQueue({ name: 'q' });
    worker.bindQueue({ name: 'empty' });
    const states = () => {
      const families = parse(registry.metrics());
      const one = (family: string, label: string) =>
        (families.get(family)?.metrics ?? []).filter((m) => m.value === '1').map((m) => m.labels?.[label]);
      const zeros = (families.get('qmux_worker_status')?.metrics ?? []).filter((m) => m.value === '0').length;
      expect(zeros).toBe(STATUSES.length - 1);
      return { status: one('qmux_worker_status', 'status'), health: one('qmux_worker_health', 'health') };
    };
    expect(states()).toEqual({ status: ['idle'], health: ['healthy'] });
    worker.pause();
    expect(states()).toEqual({ status: ['paused'], health: ['healthy'] });
    worker.resume();
    broken = true;
    q.add('x'); // the strategy picks the empty source: a broken invariant halts the worker
    await vi.advanceTimersByTimeAsync(0);
    expect(worker.status).toBe('halted');
    expect(states()).toEqual({ status: ['halted'], health: ['halted'] });
    const families = parse(registry.metrics());
    expect(value(families, 'qmux_worker_health', { worker: 'w', health: 'degraded' })).toBe(0);
    expect(value(families, 'qmux_jobs_waiting', { worker: 'w', source: 'q', state: 'due' })).toBe(1);
    broken = false;
    worker.start();
    await worker.stop();
    expect(states()).toEqual({ status: ['stopped'], health: ['healthy'] });
  });

  it('escapes label values: a backslash, a double quote and a newline in worker and source names', () => {
    const name = 'we"ird\\name\nline two';
    const source = 'a\\b"c\nd';
    const worker = new Worker(() => undefined, { name, autoRun: false });
    worker.bindQueue({ name: source }).add('x');
    const text = new Registry().add(worker).metrics();
    expect(text).toContain('worker="we\\"ird\\\\name\\nline two"');
    expect(text).toContain('source="a\\\\b\\"c\\nd"');
    // Every sample stays on one line: the parser reads the names back as they were.
    const families = parse(text);
    expect(value(families, 'qmux_jobs_added_total', { worker: name, source })).toBe(1);
    expect(value(families, 'qmux_jobs_waiting', { worker: name, source, state: 'due' })).toBe(1);
  });

  it('labels name workers, sources and states only: never a job id', () => {
    const worker = new Worker(() => undefined, { name: 'w' });
    const q = worker.bindQueue({ name: 'q' });
    const ids = Array.from({ length: 9 }, (_, i) => q.add(String(i)).id);
    const text = new Registry().add(worker).metrics();
    const labelNames = new Set<string>();
    for (const family of parse(text).values()) {
      for (const m of family.metrics) for (const label of Object.keys(m.labels ?? {})) labelNames.add(label);
    }
    expect([...labelNames].sort()).toEqual(['health', 'source', 'state', 'status', 'worker']);
    for (const id of ids) expect(text).not.toContain(`"${id}"`);
  });
});

describe('GET /metrics', () => {
  let server: Server | undefined;

  afterEach(async () => {
    await closeServer(server);
    server = undefined;
  });

  async function serve(registry: Registry, options?: { readOnly?: boolean }): Promise<string> {
    vi.useRealTimers();
    server = createServer(createAdminHandler(registry, options));
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('serves registry.metrics() as text/plain; version=0.0.4, read-only or not', async () => {
    const worker = new Worker(() => undefined, { name: 'w', autoRun: false });
    worker.bindQueue({ name: 'q' }).add('x');
    const registry = new Registry().add(worker);
    for (const options of [undefined, { readOnly: true }]) {
      const base = await serve(registry, options);
      const response = await fetch(`${base}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const text = await response.text();
      expect(text).toBe(registry.metrics());
      expect(value(parse(text), 'qmux_jobs_waiting', { worker: 'w', source: 'q', state: 'due' })).toBe(1);
      await closeServer(server);
      server = undefined;
    }
  });

  it('405 with Allow: GET, HEAD for another method', async () => {
    const base = await serve(new Registry());
    const response = await fetch(`${base}/metrics`, { method: 'POST' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(typeof ((await response.json()) as { error: unknown }).error).toBe('string');
  });
});
