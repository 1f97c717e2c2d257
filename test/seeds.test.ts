import { describe, expect, it } from 'vitest';
import { Strategy, Worker, type Job } from '../src/index.js';
import { SEED_ORDERS, fillSeedQueues } from './helpers.js';

/**
 * The strategy programs of varmq's Go examples (strategies-priority, -round-robin, -length), the
 * seed case of docs/strategies.md: concurrency 1, autoRun false, queues filled, then start().
 * The handler must see exactly the orders those programs print (SEED_ORDERS in helpers.ts).
 */
async function takenOrder(strategy: Strategy, ranked: boolean): Promise<string[]> {
  const taken: string[] = [];
  const worker = new Worker((job: Job<string>) => void taken.push(job.data), { strategy, autoRun: false });
  fillSeedQueues(worker, ranked);
  worker.start();
  await worker.waitUntilIdle();
  return taken;
}

describe('seed programs (varmq strategies page)', () => {
  for (const { strategy, ranked, order } of SEED_ORDERS) {
    it(`${strategy}: ${order.join(', ')}`, async () => {
      expect(await takenOrder(Strategy[strategy], ranked)).toEqual(order);
    });
  }
  it('Priority without any priorities follows bind order', async () => {
    expect(await takenOrder(Strategy.Priority, false)).toEqual(['alert', 'alert', 'report', 'email', 'email', 'email']);
  });
  it('the same orders with autoRun: true when the queues are filled in one synchronous run', async () => {
    const taken: string[] = [];
    const worker = new Worker((job: Job<string>) => void taken.push(job.data), { strategy: Strategy.MaxLen });
    const [alerts, reports, emails] = [worker.bindQueue(), worker.bindQueue(), worker.bindQueue()];
    alerts.add('alert');
    alerts.add('alert');
    reports.add('report');
    for (let i = 0; i < 3; i++) emails.add('email');
    await worker.waitUntilIdle();
    expect(taken).toEqual(['email', 'alert', 'email', 'alert', 'report', 'email']);
  });
});
