// A Topic fans each message out to every subscription: one job per subscriber, across workers.
//
//   npm run build && npx tsx examples/topic-fanout.ts
//
// Two workers, billing and shipping, subscribe to the same `orders` topic. Publishing one order
// makes two jobs (one each) and returns their two handles. Publishing to a topic nobody
// subscribes to delivers nothing and says so: an empty array.
import { Topic, Worker, type Job } from 'qmux';

interface Order {
  id: string;
  total: number;
  address: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const orders = new Topic<Order>();

// Nobody subscribes yet: nothing is delivered.
const early = orders.publish({ id: 'A-0', total: 5, address: 'nowhere' });
console.log(`publish A-0 with ${orders.subscriberCount} subscribers -> ${early.length} jobs:`, early);

const billing = new Worker(
  async (job: Job<Order>) => {
    await sleep(20);
    console.log(`  billing   charged ${job.data.id} ($${job.data.total.toFixed(2)})`);
    return `invoice for ${job.data.id}`;
  },
  { name: 'billing' },
);
const shipping = new Worker(
  async (job: Job<Order>) => {
    await sleep(40);
    console.log(`  shipping  labelled ${job.data.id} for ${job.data.address}`);
    return `parcel for ${job.data.id}`;
  },
  { name: 'shipping', concurrency: 2 },
);

const billingSub = billing.subscribe(orders, { name: 'orders' });
const shippingSub = shipping.subscribe(orders, { name: 'orders' });

// Each publish returns one handle per subscription, in subscription order.
for (const order of [
  { id: 'A-1', total: 12.5, address: '1 Main St' },
  { id: 'A-2', total: 99, address: '2 Side Rd' },
]) {
  const handles = orders.publish(order);
  console.log(
    `publish ${order.id} with ${orders.subscriberCount} subscribers -> ${handles.length} jobs (ids ${handles.map((h) => h.id).join(', ')})`,
  );
  const results = await Promise.all(handles.map((handle) => handle.result()));
  console.log(`  results: ${results.map((result) => JSON.stringify(result)).join(', ')}`);
}

// Unsubscribing stops new deliveries; a job already delivered still runs.
const last = orders.publish({ id: 'A-3', total: 7.25, address: '3 High St' });
shippingSub.unsubscribe();
console.log(`publish A-3, then shipping unsubscribes -> ${last.length} jobs, both still run:`);
await Promise.all(last.map((handle) => handle.settled()));
console.log(`  statuses: ${last.map((handle) => handle.status).join(', ')}`);

const billed = orders.publish({ id: 'A-4', total: 3, address: '4 Low St' });
console.log(`publish A-4 with ${orders.subscriberCount} subscriber -> ${billed.length} job`);
await billing.waitUntilIdle();

billingSub.unsubscribe();
const none = orders.publish({ id: 'A-5', total: 1, address: 'nowhere' });
console.log(`publish A-5 with ${orders.subscriberCount} subscribers -> ${none.length} jobs:`, none);
