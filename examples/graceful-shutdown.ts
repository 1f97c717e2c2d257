// Graceful shutdown: a Registry stops every worker on SIGINT or SIGTERM.
//
//   npm run build && npx tsx examples/graceful-shutdown.ts
//
// `registry.shutdown({ timeout })` stops every worker (nothing new starts), waits for the running
// jobs to settle and, at the timeout at the latest, aborts the signals of the jobs still running.
// It resolves to `{ stopped, unfinished }`: the workers whose jobs all settled in time, and the
// others. Waiting jobs are not lost: they stay queued (a service would persist or hand them off).
//
// So that the example runs by itself, it sends itself SIGINT 200 ms after starting the work.
// Press Ctrl-C in a terminal and the same handler runs.
import { Registry, Worker, type Job } from 'qmux';

const SHUTDOWN_TIMEOUT_MS = 1000;
const t0 = Date.now();
const at = () => `+${String(Math.round((Date.now() - t0) / 100) * 100).padStart(4)}ms`;

/** Waits `ms`, or rejects with the signal's reason as soon as the job is aborted. */
function work(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

interface Task {
  label: string;
  ms: number;
}

const handler = async (job: Job<Task>) => {
  await work(job.data.ms, job.signal);
  return job.data.label;
};

// mailer: short jobs, and a newsletter that is still running at the signal but finishes well
// within the timeout. reports: a job far longer than the timeout, which shutdown aborts.
const mailer = new Worker(handler, { name: 'mailer', concurrency: 2 });
const reports = new Worker(handler, { name: 'reports', concurrency: 1 });
const registry = new Registry().add(mailer).add(reports);

for (const worker of [mailer, reports]) {
  worker.on('completed', (job) => console.log(`${at()}  ${worker.name}: ${job.data.label} done`));
  worker.on('cancelled', (job) => console.log(`${at()}  ${worker.name}: ${job.data.label} cancelled (its signal aborted)`));
}

const emails = mailer.bindQueue({ name: 'emails' });
for (const to of ['ada', 'bob']) emails.add({ label: `welcome mail to ${to}`, ms: 20 });
emails.add({ label: 'newsletter (600 ms)', ms: 600 });
const reportQueue = reports.bindQueue({ name: 'reports' });
const quarterly = reportQueue.add({ label: 'quarterly report (10 s)', ms: 10_000 });
reportQueue.add({ label: 'yearly report', ms: 100 });
reportQueue.add({ label: 'audit export', ms: 100 });

let shuttingDown = false;
async function shutdown(signal: NodeJS.Signals): Promise<void> {
  if (shuttingDown) return; // a second signal while shutting down changes nothing
  shuttingDown = true;
  console.log(`${at()}  ${signal}: shutting down, waiting up to ${SHUTDOWN_TIMEOUT_MS} ms for running jobs`);
  const result = await registry.shutdown({ timeout: SHUTDOWN_TIMEOUT_MS });
  console.log(`${at()}  shutdown result: stopped [${result.stopped.join(', ')}], unfinished [${result.unfinished.join(', ')}]`);
  await quarterly.settled();
  console.log(`the quarterly report is ${quarterly.status}: ${String(await quarterly.result().catch((error: Error) => error.name))}`);
  for (const worker of [mailer, reports]) {
    console.log(`${worker.name}: ${worker.status}, ${worker.numPending} job(s) still queued (kept; start() would run them)`);
  }
  // Exit now, as the recipe in docs/recipes.md does: the jobs still queued are kept for a later start(),
  // and a process left to end by itself would warn that it strands them (QMUX_STRANDED_JOBS).
  // A real service would exit 1 when something was unfinished; the example exits 0 either way.
  process.exit(0);
}

process.once('SIGINT', (signal) => void shutdown(signal));
process.once('SIGTERM', (signal) => void shutdown(signal));

console.log(`${at()}  working: ${registry.names().join(', ')}; SIGINT in 200 ms`);
setTimeout(() => process.kill(process.pid, 'SIGINT'), 200);
