// Retries with exponential backoff, retryIf, dead letters and redrive.
//
//   npm run build && npx tsx examples/retries.ts
//
// A payment gateway (simulated) answers 503 now and then, 400 for a bad request, and 500 for one
// account until it is fixed. The worker retries up to 4 attempts with an exponential backoff
// (50, 100, 200 ms, capped at 400), but never retries a 4xx: retrying a bad request cannot help. A job that fails
// its last attempt lands in `worker.deadLetters`; once the cause is fixed, `redrive` puts it back.
//
// Prints, per payment, each attempt and what happened, then the dead letters and the redrive:
//   pay-1  attempt 1 failed (HTTP 503), retry in 50 ms
//   pay-1  attempt 2 failed (HTTP 503), retry in 100 ms
//   pay-1  attempt 3 succeeded: receipt for pay-1
//   pay-2  attempt 1 failed (HTTP 400), not retried: failed for good -> dead letter
//   ...
import { Worker, type Job } from 'qmux';

class HttpError extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`HTTP ${status}`);
    this.status = status;
  }
}

interface Payment {
  id: string;
  /** How many times the gateway answers 503 before it answers 200. */
  flakyFor: number;
  /** A request the gateway always refuses. */
  bad?: boolean;
  /** An account the gateway fails with 500 until `brokenAccountFixed`. */
  brokenAccount?: boolean;
}

let brokenAccountFixed = false;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The simulated gateway call: a few ms of "network", then an answer. */
async function charge(job: Job<Payment>): Promise<string> {
  await sleep(5);
  const payment = job.data;
  if (payment.bad) throw new HttpError(400);
  if (payment.brokenAccount && !brokenAccountFixed) throw new HttpError(500);
  if (job.attempt <= payment.flakyFor) throw new HttpError(503);
  return `receipt for ${payment.id}`;
}

const worker = new Worker(charge, {
  concurrency: 2,
  retry: {
    attempts: 4,
    backoff: { type: 'exponential', delay: 50, maxDelay: 400 },
    // 4xx: the request itself is wrong, a retry would fail the same way.
    retryIf: (error) => !(error instanceof HttpError && error.status < 500),
  },
});

// Events arrive interleaved across payments; keep them per payment and print them in order.
const log = new Map<string, string[]>();
const note = (id: string, line: string) => (log.get(id) ?? log.set(id, []).get(id)!).push(line);
worker.on('retrying', (job, error, delayMs) =>
  note(job.data.id, `attempt ${job.attempt} failed (${(error as Error).message}), retry in ${delayMs} ms`),
);
worker.on('completed', (job, receipt) => note(job.data.id, `attempt ${job.attempt} succeeded: ${receipt}`));
worker.on('failed', (job, error) => {
  const why = job.attempt < 4 ? 'not retried' : 'out of attempts';
  note(job.data.id, `attempt ${job.attempt} failed (${(error as Error).message}), ${why}: failed for good`);
});
worker.on('dead', (job) => note(job.data.id, '-> kept in worker.deadLetters'));

const payments = worker.bindQueue({ name: 'payments' });
const add = (payment: Payment, options = {}) => payments.add(payment, { id: payment.id, ...options });
const handles = [
  add({ id: 'pay-1', flakyFor: 2 }),
  add({ id: 'pay-2', flakyFor: 0, bad: true }),
  add({ id: 'pay-3', flakyFor: 0 }),
  add({ id: 'pay-4', flakyFor: 0, brokenAccount: true }),
  // A per-job override: this one may try 6 times.
  add({ id: 'pay-5', flakyFor: 5 }, { retry: { attempts: 6 } }),
];
await worker.waitUntilIdle();

for (const [id, lines] of [...log].sort(([a], [b]) => a.localeCompare(b))) {
  for (const line of lines) console.log(`${id}  ${line}`);
}
console.log(`\nstatuses: ${handles.map((h) => `${h.id}=${h.status}`).join(', ')}`);

console.log(`\ndead letters (${worker.deadLetters.length}):`);
for (const entry of worker.deadLetters) {
  console.log(`  ${entry.data.id} from "${entry.source}" after ${entry.attempts} attempt(s): ${(entry.error as Error).message}`);
}

// The broken account is fixed: redrive its dead letter (attempts count from 1 again). The bad
// request would fail the same way, so it stays where it is.
brokenAccountFixed = true;
const entry = worker.deadLetters.find((e) => e.data.id === 'pay-4');
if (entry === undefined) throw new Error('pay-4 should be a dead letter');
const redriven = worker.redrive(entry);
console.log(`\nredrive pay-4 -> ${await redriven.result()} on attempt ${redriven.attempts}`);
console.log(`dead letters left: ${worker.deadLetters.map((e) => e.data.id).join(', ')}`);
