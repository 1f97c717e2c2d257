// A priority queue: inside it, a lower priority number runs first, then FIFO among equals.
//
//   npm run build && npx tsx examples/priority-queue.ts
//
// `worker.bindPriorityQueue()` orders the jobs *within* the queue by the number given to
// `pq.add(data, priority)`. That is a different thing from the bind option `priority`, which
// ranks whole sources in the worker's list: below, an `incidents` queue ranked 1 goes before the
// `tickets` priority queue ranked 2 whatever the tickets' own numbers.
//
// Prints:
//   tickets alone: P0 outage, P0 data loss, P1 login slow, P1 export broken, P2 typo, P3 feature idea
//   addAll results, in add order: done P3 wishlist, done P0 breach, done P1 billing
//   with a ranked queue: INCIDENT db down, INCIDENT dns, P0 outage, P1 login slow, P2 typo
import { Worker, type Job } from 'qmux';

const order: string[] = [];
const worker = new Worker(
  (job: Job<string>) => {
    order.push(job.data);
    return `done ${job.data}`;
  },
  { autoRun: false }, // fill first, then start, so the order shows the priorities alone
);
const tickets = worker.bindPriorityQueue({ name: 'tickets' });

tickets.add('P2 typo', 2);
tickets.add('P0 outage', 0);
tickets.add('P1 login slow', 1);
tickets.add('P3 feature idea', 3);
tickets.add('P0 data loss', 0); // same number as "P0 outage", added later: runs after it
tickets.add('P1 export broken', 1);

worker.start();
await worker.waitUntilIdle();
console.log(`tickets alone: ${order.join(', ')}`);

// addAll adds several at once (all or nothing); the group's result() is in add order, whatever
// order the jobs ran in.
const group = tickets.addAll([
  { data: 'P3 wishlist', priority: 3 },
  { data: 'P0 breach', priority: 0 },
  { data: 'P1 billing', priority: 1 },
]);
console.log(`addAll results, in add order: ${(await group.result()).join(', ')}`);

// Two sources in the list: the ranked queue goes first (Strategy.Priority, the default).
order.length = 0;
const ranked = new Worker((job: Job<string>) => void order.push(job.data), { autoRun: false });
const triage = ranked.bindPriorityQueue({ name: 'tickets', priority: 2 });
const incidents = ranked.bindQueue({ name: 'incidents', priority: 1 });
triage.add('P2 typo', 2);
triage.add('P0 outage', 0);
triage.add('P1 login slow', 1);
incidents.add('INCIDENT db down');
incidents.add('INCIDENT dns');
ranked.start();
await ranked.waitUntilIdle();
console.log(`with a ranked queue: ${order.join(', ')}`);
