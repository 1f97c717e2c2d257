// Catalogue of workloads: ids, sizes, rows and the variants (libraries) measured in each.
// Shared by run.mjs (planning, tables) and cell.mjs (which variant names exist).

/** Variant id -> label shown in the tables. */
export const LABELS = {
  qmux: 'qmux',
  'fastq-cb': 'fastq (callback API)',
  'fastq-promise': 'fastq.promise',
  'p-queue': 'p-queue',
  'p-limit': 'p-limit',
  async: 'async.queue',
  floor: 'Promise.all (floor, no limit)',
  'handle-floor': 'minimal dispatcher with a handle per job (floor)',
  'one-queue': 'one queue (default strategy)',
  Priority: 'Strategy.Priority',
  RoundRobin: 'Strategy.RoundRobin',
  MaxLen: 'Strategy.MaxLen',
  MinLen: 'Strategy.MinLen',
  Weighted: 'Strategy.Weighted (weights 1..4)',
  'qmux-fn': 'qmux function worker',
  'qmux-threads': 'qmux threads worker',
  tinypool: 'raw tinypool',
  'no-listeners': 'qmux, no listeners',
  'context-on': 'qmux, asyncContext on (default)',
  'context-off': 'qmux, asyncContext: false',
  listening: "qmux, listeners on 'active' and 'completed'",
  piscina: 'raw piscina',
  'one-source': 'one queue bound alone',
  'idle999-Priority': 'Strategy.Priority, 1000 queues, only the last busy',
  'idle999-RoundRobin': 'Strategy.RoundRobin, 1000 queues, only the last busy',
  'idle999-Weighted': 'Strategy.Weighted, 1000 queues (weights 1..4), only the last busy',
  'idle999-MaxLen': 'Strategy.MaxLen, 1000 queues, only the last busy',
  'idle999-MinLen': 'Strategy.MinLen, 1000 queues, only the last busy',
  'busy1000-Weighted': 'Strategy.Weighted, 1000 busy queues (weights 1..4)',
  plain: 'plain queue (no keys)',
  'keys-10': 'keys, 10 keys',
  'keys-100k': 'keys, 100,000 keys',
  'weighted-10': 'keys with weights 1..4, 10 keys',
  'weighted-100k': 'keys with weights 1..4, 100,000 keys',
  'capped-10': 'keys.concurrency 1, 10 keys',
  'capped-100k': 'keys.concurrency 1, 100,000 keys',
  'capped-weighted-10': 'keys.concurrency 1 and weights, 10 keys',
  'capped-weighted-100k': 'keys.concurrency 1 and weights, 100,000 keys',
};

const concurrencyRows = (list) => list.map((c) => ({ label: `c=${c}`, concurrency: c }));

/** An async-context workload (SPEC 13): one qmux cell with `asyncContext` on (the default) and off. */
const contextWorkload = (id, title) => ({
  id,
  title,
  kind: 'throughput',
  jobs: { full: 200_000, quick: 5_000 },
  rows: concurrencyRows([1, 16]),
  variants: ['context-on', 'context-off'],
  baseline: 'context-off',
  ratioLabel: 'variant / off',
  ratioRowOverBaseline: true,
});

/**
 * kind:
 *  - 'throughput': each sample is { ns, jobs }; table shows jobs/s, ns/job, ratio baseline / variant on ns/job.
 *  - 'memory':     each sample is { queuedBytesPerJob, retainedBytes, nsPerAdd }.
 *  - 'delayed':    each sample is { nsPerAdd, heapBytesPerJob, timersArmed, ... }.
 * baseline: the variant that is the numerator of the ratio column.
 * rowIndependent: variants whose measurement does not depend on the row (measured once, with the
 *   first row, and shown in every row).
 */
export const WORKLOADS = [
  {
    id: 'noop',
    title: 'noop: fire-and-forget no-op async jobs, one queue, time from first add to drained',
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: concurrencyRows([1, 16, 256]),
    variants: ['qmux', 'fastq-cb', 'fastq-promise', 'p-queue', 'p-limit', 'async', 'floor', 'handle-floor'],
    // The floor has no concurrency limit: measured once (with the first row), shown in every row.
    rowIndependent: ['floor'],
    baseline: 'qmux',
    ratioLabel: 'qmux / peer',
  },
  {
    id: 'result',
    title: "result: no-op async jobs, every job's result promise awaited",
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: concurrencyRows([1, 16, 256]),
    variants: ['qmux', 'fastq-promise', 'p-queue', 'p-limit', 'async', 'floor'],
    rowIndependent: ['floor'],
    baseline: 'qmux',
    ratioLabel: 'qmux / peer',
  },
  {
    id: 'strategies',
    title: 'strategies: qmux only, 4 sources, jobs spread evenly (i % 4), concurrency 16, fire-and-forget',
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: concurrencyRows([16]),
    variants: ['one-queue', 'Priority', 'RoundRobin', 'MaxLen', 'MinLen', 'Weighted'],
    baseline: 'one-queue',
    // Ratio here is strategy / one-queue (cost of the strategy relative to the single-queue figure).
    ratioLabel: 'strategy / one-queue',
    ratioRowOverBaseline: true,
  },
  {
    id: 'sources',
    title: 'sources: qmux only, 1000 bound queues with only the last one busy, or all busy, concurrency 16, fire-and-forget, against one queue',
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: concurrencyRows([16]),
    variants: ['one-source', 'idle999-Priority', 'idle999-RoundRobin', 'idle999-Weighted', 'idle999-MaxLen', 'idle999-MinLen', 'busy1000-Weighted'],
    baseline: 'one-source',
    ratioLabel: 'variant / one queue',
    ratioRowOverBaseline: true,
  },
  {
    id: 'memory',
    title: 'memory: heap per queued job (paused queue, small integer data), heap retained after drain',
    kind: 'memory',
    jobs: { full: 1_000_000, quick: 20_000 },
    rows: [{ label: 'paused', concurrency: 16 }],
    variants: ['qmux', 'fastq-cb', 'p-queue', 'async'],
    baseline: 'qmux',
    ratioLabel: 'qmux / peer',
  },
  {
    id: 'delayed',
    title: 'delayed: qmux only, jobs added with delay = random() * 60 s',
    kind: 'delayed',
    jobs: { full: 1_000_000, quick: 20_000 },
    rows: [{ label: 'delayed', concurrency: 16 }],
    variants: ['qmux'],
    baseline: 'qmux',
  },
  {
    id: 'function',
    title: 'function: function worker (job data is the function), results awaited, concurrency 16',
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: concurrencyRows([16]),
    variants: ['qmux-fn', 'p-limit'],
    baseline: 'qmux-fn',
    ratioLabel: 'qmux / peer',
  },
  {
    id: 'events',
    title: "events: the noop workload (c=16) with nobody listening, and with no-op listeners on 'active' and 'completed'",
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: concurrencyRows([16]),
    variants: ['no-listeners', 'listening'],
    baseline: 'no-listeners',
    ratioLabel: 'variant / no listeners',
    ratioRowOverBaseline: true,
  },
  contextWorkload('context', 'context: the noop workload with asyncContext on (the default) and off (SPEC 13), adds outside any AsyncLocalStorage'),
  contextWorkload(
    'context-result',
    "context-result: the result workload (every job's result awaited) with asyncContext on (the default) and off, adds outside any AsyncLocalStorage",
  ),
  contextWorkload('context-als', 'context-als: the context workload with every add inside one AsyncLocalStorage.run() (a request context)'),
  {
    id: 'threads',
    title: 'threads: tiny tasks (data + 1) on 2 worker threads, results awaited; thread start-up not timed',
    kind: 'throughput',
    jobs: { full: 20_000, quick: 2_000 },
    rows: concurrencyRows([2]),
    variants: ['qmux-threads', 'tinypool', 'piscina'],
    baseline: 'qmux-threads',
    ratioLabel: 'qmux / peer',
  },
  {
    id: 'keys',
    title: 'keys: fire-and-forget no-op jobs on one queue bound with keys (job i has key i % K), concurrency 16, against a plain queue',
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: concurrencyRows([16]),
    variants: ['plain', 'keys-10', 'keys-100k', 'weighted-10', 'weighted-100k'],
    baseline: 'plain',
    ratioLabel: 'variant / plain',
    ratioRowOverBaseline: true,
  },
  {
    id: 'keys-capped',
    title:
      'keys-capped: the keys workload with keys.concurrency 1 and the worker unbounded (concurrency 1e9): every key with a job running is at its cap and waits outside the turn order',
    kind: 'throughput',
    jobs: { full: 200_000, quick: 5_000 },
    rows: [{ label: 'c=1e9', concurrency: 1e9 }],
    variants: ['capped-10', 'capped-100k', 'capped-weighted-10', 'capped-weighted-100k'],
    baseline: 'capped-10',
    ratioLabel: 'variant / 10 keys',
    ratioRowOverBaseline: true,
  },
  {
    id: 'keys-memory',
    title: 'keys-memory: heap per queued job on a paused queue (plain, and keyed over 100,000 keys), heap retained once drained',
    kind: 'memory',
    jobs: { full: 200_000, quick: 20_000 },
    rows: [{ label: 'paused', concurrency: 16 }],
    variants: ['plain', 'keys-100k'],
    baseline: 'plain',
    ratioLabel: 'variant / plain',
  },
];

export const WORKLOAD_IDS = WORKLOADS.map((w) => w.id);
