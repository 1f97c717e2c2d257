// The admin HTTP API: health, workers, pause/resume/start/stop and concurrency over node:http.
//
//   npm run build && npx tsx examples/admin.ts
//
// `createAdminHandler(registry)` returns a plain `(req, res)` handler. Here it listens on
// 127.0.0.1 at a free port; the example calls it with fetch, prints each exchange and closes.
// In a service, mount it behind your own authentication: it can stop your workers.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminHandler, Registry, Worker, type Job } from 'qmux';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mailer = new Worker(async (job: Job<string>) => sleep(job.data.length), { name: 'mailer', concurrency: 2 });
// Its one job runs until the example lets it finish, so it is still running when the example
// stops the worker, however slow the machine.
let finishThumbnail = () => {};
const thumbnailMayFinish = new Promise<void>((resolve) => (finishThumbnail = resolve));
const thumbnails = new Worker(async () => thumbnailMayFinish, { name: 'thumbnails', autoRun: false });
const registry = new Registry().add(mailer).add(thumbnails);
const emails = mailer.bindQueue({ name: 'emails' });
for (const to of ['ada', 'bob', 'cy']) emails.add(`welcome ${to}`);
thumbnails.bindQueue({ name: 'images' }).add('cat.png');
await mailer.waitUntilIdle();

const server = createServer(createAdminHandler(registry));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;
console.log('admin API listening on 127.0.0.1 (a free port)\n');

/** One request; prints the method, path, status and the body (trimmed to what is worth showing). */
async function show(method: string, path: string, body?: unknown, pick?: (json: any) => unknown): Promise<void> {
  // A route that changes a worker needs this content type: a form on another site cannot send it.
  const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(`http://127.0.0.1:${port}${path}`, init);
  const json = await response.json();
  const allow = response.headers.get('allow');
  console.log(`${method} ${path}${body === undefined ? '' : ` ${init.body as string}`}`);
  console.log(`  -> ${response.status}${allow ? ` (Allow: ${allow})` : ''} ${JSON.stringify(pick ? pick(json) : json)}`);
}

await show('GET', '/health', undefined, (j) => ({ status: j.status, workers: Object.keys(j.workers) }));
await show('GET', '/workers', undefined, (j) => j.workers.map((w: any) => `${w.name}: ${w.status}, concurrency ${w.concurrency}`));
await show('GET', '/workers/mailer', undefined, (j) => ({ status: j.status, counters: j.stats.counters }));
await show('POST', '/workers/mailer/pause');
await show('PUT', '/workers/mailer/concurrency', { concurrency: 4 });
await show('PUT', '/workers/mailer/concurrency', { concurrency: 'Infinity' });
await show('POST', '/workers/mailer/resume');
await show('POST', '/workers/thumbnails/start');
await show('POST', '/workers/thumbnails/stop'); // answers at once: 'stopping' while its job runs
await show('POST', '/workers/thumbnails/resume'); // resume() undoes pause(), not stop(): 409
finishThumbnail();
await show('PUT', '/workers/mailer/concurrency', { concurrency: 0 });
await show('PUT', '/workers/mailer/concurrency', '{not json');
await show('GET', '/workers/nobody');
await show('DELETE', '/workers/mailer');

await new Promise<void>((resolve) => server.close(() => resolve()));
await registry.shutdown();
console.log('\nserver closed, workers stopped');
