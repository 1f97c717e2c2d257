// The admin handler's dashboard (GET /) and Prometheus metrics (GET /metrics), over three
// workers doing real work: a mailer with two weighted queues (newsletters come in bursts), a
// thumbnailer hashing in libuv's thread pool (pbkdf2) with a rate-limited backfill, and a
// paused reports worker whose jobs pile up.
//
//   npm run build && npx tsx examples/dashboard.ts             # until Ctrl-C; open the URL it prints
//   npx tsx examples/dashboard.ts --port 9090 --for 60          # a fixed port, for 60 s
//   npm run screenshot                                          # examples/admin-dashboard.png
//
// `--screenshot <file.png>` opens the page in headless Chromium (Debian's `chromium`, driven by
// puppeteer-core, the dashboard test's tooling), waits `--after` seconds (default 300: the chart
// shows five minutes) and saves a PNG.
import { pbkdf2 } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createAdminHandler, Registry, Strategy, Worker, type Job } from 'qmux';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    for: { type: 'string' },
    screenshot: { type: 'string' },
    after: { type: 'string', default: '300' },
  },
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const between = (low: number, high: number) => low + Math.random() * (high - low);

// A mailer: sending takes 100-300 ms of waiting on a (pretend) SMTP server.
const mailer = new Worker(async (job: Job<{ to: string }>) => sleep(between(100, 300) + job.data.to.length), {
  name: 'mailer',
  concurrency: 4,
  strategy: Strategy.Weighted,
});
const transactional = mailer.bindQueue({ name: 'transactional', weight: 3 });
const newsletters = mailer.bindQueue({ name: 'newsletters', weight: 1 });

// A thumbnailer: real CPU work, off the main thread (pbkdf2 runs in libuv's pool).
const hash = (input: string) =>
  new Promise<void>((resolve, reject) => pbkdf2(input, 'salt', 20_000, 32, 'sha256', (e) => (e ? reject(e) : resolve())));
const thumbnails = new Worker(async (job: Job<string>) => hash(job.data), { name: 'thumbnails', concurrency: 2 });
const uploads = thumbnails.bindQueue({ name: 'uploads', priority: 1 });
const backfill = thumbnails.bindQueue({ name: 'backfill', priority: 2, rateLimit: { limit: 4, interval: 1000 } });

// Reports: paused for maintenance, so its jobs wait (and the nightly ones are not due yet).
const reports = new Worker(async () => sleep(500), { name: 'reports', concurrency: 1 });
const daily = reports.bindQueue({ name: 'daily' });
reports.pause();

const registry = new Registry().add(mailer).add(thumbnails).add(reports);

// Producers.
let tick = 0;
const producer = setInterval(() => {
  tick++;
  for (let i = Math.round(between(0, 1.6)); i > 0; i--) transactional.add({ to: `user${tick}@example.com` });
  if (tick % 600 === 50) for (let i = 0; i < 220; i++) newsletters.add({ to: `reader${i}@example.com` });
  if (Math.random() < 0.35) uploads.add(`upload-${tick}.jpg`);
  if (backfill.length < 40) for (let i = 0; i < 60; i++) backfill.add(`old-${tick}-${i}.jpg`);
  if (tick % 40 === 0) daily.add(`report ${tick / 40}`, { delay: tick % 120 === 0 ? 3_600_000 : 0 });
}, 100);
for (let i = 0; i < 12; i++) daily.add(`report ${i}`);

const server = createServer(createAdminHandler(registry));
await new Promise<void>((resolve) => server.listen(Number(values.port), '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log(`dashboard at ${base}/`);
console.log(`metrics at ${base}/metrics`);

let stopping = false;
async function shutDown(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(producer);
  // A scrape, as Prometheus would see it: a few of the lines.
  const text = await (await fetch(`${base}/metrics`)).text();
  console.log('\na few lines of GET /metrics:');
  for (const line of text.split('\n').filter((l) => /^qmux_(jobs_started_total|worker_status\{worker="reports",status="paused"\})/.test(l))) {
    console.log(`  ${line.replace(/ \d+$/, ' …')}`);
  }
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  for (const source of [transactional, newsletters, uploads, backfill, daily]) source.purge();
  const { unfinished } = await registry.shutdown({ timeout: 5000 });
  console.log(`\nshut down${unfinished.length > 0 ? ` (cancelled in ${unfinished.join(', ')})` : ''}`);
}
process.once('SIGINT', () => void shutDown());

if (values.screenshot !== undefined) {
  const { launchChromium } = await import('../test/browser.js');
  const chromium = await launchChromium();
  try {
    const page = await chromium.browser.newPage();
    await page.setViewport({ width: 1320, height: 900, deviceScaleFactor: 1 });
    await page.goto(`${base}/`);
    const seconds = Number(values.after);
    console.log(`taking a screenshot in ${seconds} s (the page keeps the chart's history)...`);
    await sleep(seconds * 1000);
    await page.screenshot({ path: values.screenshot as `${string}.png`, fullPage: true });
    console.log(`saved ${values.screenshot}`);
  } finally {
    await chromium.close();
  }
  await shutDown();
} else if (values.for !== undefined) {
  await sleep(Number(values.for) * 1000);
  await shutDown();
} else {
  console.log('(Ctrl-C to stop)');
}
