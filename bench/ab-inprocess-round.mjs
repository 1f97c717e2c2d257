// One round of the no-op cell for bench/ab-inprocess.mjs, which imports this file once per build
// (with a query string each), so that each build gets call sites of its own here.
const job = () => Promise.resolve();

/**
 * `jobs` fire-and-forget no-op jobs on a fresh worker of class `Worker`: CPU ns per job.
 * `asyncContext`, when given, is passed as the worker option (`AB_CONTEXT`).
 */
export async function noopRound(Worker, jobs, concurrency, asyncContext) {
  const worker = new Worker(job, asyncContext === undefined ? { concurrency } : { concurrency, asyncContext });
  const queue = worker.bindQueue();
  const before = process.cpuUsage();
  for (let i = 0; i < jobs; i++) queue.add(i);
  await worker.waitUntilIdle();
  const spent = process.cpuUsage(before);
  return ((spent.user + spent.system) * 1000) / jobs;
}

/**
 * The `strategies` cell of bench/cell.mjs: `jobs` fire-and-forget no-op jobs spread over 4 queues
 * (`i % 4`; weights 1-4 under Weighted) on a fresh worker under `Strategy[name]`: CPU ns per job.
 */
export async function strategyRound(Worker, Strategy, name, jobs, concurrency) {
  const worker = new Worker(job, { concurrency, strategy: Strategy[name] });
  const queues = [1, 2, 3, 4].map((k) => worker.bindQueue(name === 'Weighted' ? { weight: k } : undefined));
  const before = process.cpuUsage();
  for (let i = 0; i < jobs; i++) queues[i & 3].add(i);
  await worker.waitUntilIdle();
  const spent = process.cpuUsage(before);
  return ((spent.user + spent.system) * 1000) / jobs;
}

/**
 * The `keys` cell of bench/keys-cpu.mjs: `jobs` fire-and-forget no-op jobs on one queue bound
 * with keys, job i of key `i % keys`, on a fresh worker: CPU ns per job.
 */
export async function keysRound(Worker, keys, jobs, concurrency) {
  const worker = new Worker(job, { concurrency });
  const queue = worker.bindQueue({ keys: { by: (i) => i % keys } });
  const before = process.cpuUsage();
  for (let i = 0; i < jobs; i++) queue.add(i);
  await worker.waitUntilIdle();
  const spent = process.cpuUsage(before);
  return ((spent.user + spent.system) * 1000) / jobs;
}

/**
 * The no-op cell with one delayed job waiting an hour in the same queue, as a worker that holds
 * scheduled jobs runs the others: every pass then reads the clock for what may have come due.
 * `jobs` no-op jobs on a fresh worker, then the held job is cancelled: CPU ns per job.
 */
export async function heldRound(Worker, jobs, concurrency) {
  let startsLeft = jobs;
  let allStarted;
  const started = new Promise((resolve) => {
    allStarted = resolve;
  });
  const worker = new Worker(
    () => {
      if (--startsLeft === 0) allStarted();
      return Promise.resolve();
    },
    { concurrency },
  );
  const queue = worker.bindQueue();
  const held = queue.add(-1, { delay: 3_600_000 });
  const before = process.cpuUsage();
  for (let i = 0; i < jobs; i++) queue.add(i);
  await started;
  held.cancel();
  await worker.waitUntilIdle();
  const spent = process.cpuUsage(before);
  return ((spent.user + spent.system) * 1000) / jobs;
}
