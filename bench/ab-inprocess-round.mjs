// One round of the no-op cell for bench/ab-inprocess.mjs, which imports this file once per build
// (with a query string each), so that each build gets call sites of its own here.
const job = () => Promise.resolve();

/** `jobs` fire-and-forget no-op jobs on a fresh worker of class `Worker`: CPU ns per job. */
export async function noopRound(Worker, jobs, concurrency) {
  const worker = new Worker(job, { concurrency });
  const queue = worker.bindQueue();
  const before = process.cpuUsage();
  for (let i = 0; i < jobs; i++) queue.add(i);
  await worker.waitUntilIdle();
  const spent = process.cpuUsage(before);
  return ((spent.user + spent.system) * 1000) / jobs;
}
