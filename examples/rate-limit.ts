// Throttling HTTP calls: a per-source rateLimit and concurrency, one worker for several APIs.
//
//   npm run build && npx tsx examples/rate-limit.ts
//
// Each upstream API gets its own queue with its own limits: `rateLimit: { limit, interval }`
// allows at most `limit` starts in any window of `interval` ms (a sliding window, so there is no
// burst of 2x the limit at a window edge) and `concurrency` caps how many of its calls are in
// flight. A source at its limit is not eligible, so the worker gives the free slot to another API
// instead of waiting, and wakes up by itself when the window lets the next call through.
//
// The calls are simulated with timers (no network). The run takes about a second.
import { Strategy, Worker, type Job } from 'qmux';

interface Call {
  api: string;
  path: string;
  /** Simulated latency, ms. */
  latency: number;
}

const APIS = [
  { name: 'github', rateLimit: { limit: 3, interval: 300 }, concurrency: 2, calls: 9, latency: 80 },
  { name: 'weather', rateLimit: { limit: 5, interval: 300 }, concurrency: 5, calls: 10, latency: 30 },
  { name: 'search', rateLimit: undefined, concurrency: 1, calls: 6, latency: 60 },
];

const t0 = Date.now();
const starts = new Map<string, number[]>();
const inFlight = new Map<string, number>();
const maxInFlight = new Map<string, number>();

/** A fake HTTP GET: `latency` ms later, a 200 with a tiny body. Honours the job's signal. */
function fakeGet(call: Call, signal: AbortSignal): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve({ status: 200, body: `{"path":"${call.path}"}` }), call.latency);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

const worker = new Worker(
  async (job: Job<Call>) => {
    const api = job.data.api;
    (starts.get(api) ?? starts.set(api, []).get(api)!).push(Date.now() - t0);
    inFlight.set(api, (inFlight.get(api) ?? 0) + 1);
    maxInFlight.set(api, Math.max(maxInFlight.get(api) ?? 0, inFlight.get(api)!));
    try {
      return (await fakeGet(job.data, job.signal)).status;
    } finally {
      inFlight.set(api, inFlight.get(api)! - 1);
    }
  },
  // 6 slots in all, shared round-robin between the APIs that may start a call right now.
  { concurrency: 6, strategy: Strategy.RoundRobin },
);

const handles = [];
for (const api of APIS) {
  const queue = worker.bindQueue({
    name: api.name,
    concurrency: api.concurrency,
    ...(api.rateLimit === undefined ? {} : { rateLimit: api.rateLimit }),
  });
  for (let i = 1; i <= api.calls; i++) {
    handles.push(queue.add({ api: api.name, path: `/${api.name}/${i}`, latency: api.latency }));
  }
}
const statuses = await Promise.all(handles.map((handle) => handle.result()));
const elapsed = Date.now() - t0;

/**
 * Most starts within any window of `interval` ms (the definition the limit uses). The times are
 * read in the handler, which can run a few ms after the worker read its clock to decide the start
 * (the 'active' listeners run in between, and the machine may be busy), so windows are measured
 * `SLACK_MS` short.
 */
const SLACK_MS = 10;
function busiestWindow(times: number[], interval: number): number {
  let best = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while ((times[i] as number) - (times[j] as number) >= interval - SLACK_MS) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

console.log('Start times (ms since the first add), rounded to 10 ms:');
for (const api of APIS) {
  const times = starts.get(api.name) ?? [];
  console.log(`  ${api.name.padEnd(8)} ${times.map((t) => Math.round(t / 10) * 10).join(' ')}`);
}
console.log('\nLimits and what was observed:');
for (const api of APIS) {
  const times = starts.get(api.name) ?? [];
  const rate =
    api.rateLimit === undefined
      ? 'no rate limit'
      : `at most ${busiestWindow(times, api.rateLimit.interval)} started in any ${api.rateLimit.interval} ms (limit ${api.rateLimit.limit})`;
  console.log(`  ${api.name}: ${times.length} calls, ${rate}, at most ${maxInFlight.get(api.name)} in flight (limit ${api.concurrency})`);
}
const ok = statuses.filter((status) => status === 200).length;
console.log(`\n${ok} of ${handles.length} calls answered 200 in about ${Math.round(elapsed / 100) * 100} ms`);
