// Delayed jobs: `delay` (ms from now) and `runAt` (a Date or epoch ms).
//
//   npm run build && npx tsx examples/delayed.ts
//
// A delayed job waits in its queue, status 'delayed', until its due time; then it joins the
// queue's order *by due time*, not by add order, and runs when a slot is free. The worker arms a
// single timer for the earliest due time and wakes up by itself; a pending delayed job keeps the
// process alive, an idle worker does not. Jobs are added out of order below; they run in due order.
//
// Prints:
//   statuses after add: now=waiting, +300=delayed, +100=delayed, +200 (runAt)=delayed, past runAt=waiting
//   ran: now, past runAt, +100, +200 (runAt), +300
//   ...
import { Worker, type Job } from 'qmux';

const t0 = Date.now();
const ran: { label: string; at: number }[] = [];
const worker = new Worker((job: Job<string>) => void ran.push({ label: job.data, at: Date.now() - t0 }));
const reminders = worker.bindQueue({ name: 'reminders' });

// Added out of order on purpose.
const handles = [
  reminders.add('now'),
  reminders.add('+300', { delay: 300 }),
  reminders.add('+100', { delay: 100 }),
  reminders.add('+200 (runAt)', { runAt: new Date(t0 + 200) }),
  reminders.add('past runAt', { runAt: t0 - 60_000 }), // a time in the past: due at once
];
const labels = ['now', '+300', '+100', '+200 (runAt)', 'past runAt'];
console.log(`statuses after add: ${handles.map((h, i) => `${labels[i]}=${h.status}`).join(', ')}`);
console.log(`queue length ${reminders.length} (delayed jobs count), worker ${worker.status}`);

await worker.waitUntilIdle();
console.log(`ran: ${ran.map((r) => r.label).join(', ')}`);

// Each delayed job ran at (or just after) its due time, never before.
const due: Record<string, number> = { now: 0, 'past runAt': 0, '+100': 100, '+200 (runAt)': 200, '+300': 300 };
const early = ran.filter((r) => r.at < (due[r.label] as number));
console.log(`jobs started before their due time: ${early.length}`);

// A due job that is busy waiting for a slot keeps its place by due time: with one slot held by a
// long job, a job due at +50 goes before one added later without a delay.
const order: string[] = [];
const single = new Worker(
  async (job: Job<{ label: string; ms: number }>) => {
    order.push(job.data.label);
    await new Promise((resolve) => setTimeout(resolve, job.data.ms));
  },
  { concurrency: 1 },
);
const q = single.bindQueue();
q.add({ label: 'long job (150 ms)', ms: 150 });
q.add({ label: 'due at +50', ms: 0 }, { delay: 50 });
await new Promise((resolve) => setTimeout(resolve, 100));
q.add({ label: 'added at +100, due at once', ms: 0 });
await single.waitUntilIdle();
console.log(`one slot: ${order.join(' -> ')}`);
