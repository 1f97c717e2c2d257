// qmux in a few seconds: several sources, one worker, a strategy, and why each job ran when it did.
//
//   npm run demo                  (Priority, the default strategy)
//   npm run demo -- RoundRobin    (or MaxLen, MinLen, Weighted)
//
// One worker with 3 slots binds four sources, listed here in list order:
//   alerts   a queue, rank 1, at most 1 of its jobs running at once; one alert is added with a delay
//   emails   a queue, rank 2, rate-limited to 2 starts in any 500 ms
//   reports  a priority queue, rank 3: inside it, a lower job priority runs first
//   orders   a subscription to a topic, without a rank (so it comes after every ranked source)
// A capped or rate-limited source is not eligible, and the strategy passes over it: the slot goes
// to the next source instead of sitting idle.
//
// To say *why* a source gave each job, the strategy is wrapped: the wrapper delegates to the
// built-in strategy and records the list it saw (a custom strategy is just `{ name, create() }`).
// The worker emits `active` right after that pick, so each `active` event is matched with it.
import { Strategy, Topic, Worker, type Job, type Picker, type Source, type SourceView } from 'qmux';

interface Task {
  label: string;
  /** How long the handler takes, in ms. */
  ms: number;
}

// ------------------------------------------------------------------ the strategy, explained

/** What one source looked like when the strategy was asked. */
interface Seen {
  name: string;
  due: number;
  delayed: number;
  running: number;
  eligible: boolean;
  weight: number;
}

interface Pick {
  list: Seen[];
  picked: string;
}

const STRATEGIES: Record<string, Strategy> = { ...Strategy };
const strategyName = process.argv[2] ?? 'Priority';
const inner = STRATEGIES[strategyName];
if (inner === undefined) {
  console.error(`unknown strategy "${strategyName}"; try one of ${Object.keys(STRATEGIES).join(', ')}`);
  process.exit(2);
}

const sources = new Map<string, Source>();
let lastPick: Pick | undefined;

/** Delegates to `strategy` and keeps a snapshot of every list it was shown. */
function explained(strategy: Strategy): Strategy {
  return {
    name: strategy.name,
    create(): Picker {
      const picker = strategy.create();
      return {
        pick(list: readonly SourceView[]): SourceView {
          const picked = picker.pick(list);
          lastPick = {
            picked: picked.name,
            list: list.map((view) => ({
              name: view.name,
              due: view.length,
              delayed: (sources.get(view.name)?.length ?? view.length) - view.length,
              running: view.running,
              eligible: view.eligible,
              weight: view.weight,
            })),
          };
          return picked;
        },
      };
    },
  };
}

// ------------------------------------------------------------------ the worker and its sources

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const worker = new Worker(
  async (job: Job<Task>) => {
    await sleep(job.data.ms);
    return job.data.label;
  },
  { name: 'demo', concurrency: 3, strategy: explained(inner), autoRun: false },
);

// Weights only matter under Strategy.Weighted (npm run demo -- Weighted).
const EMAIL_RATE = { limit: 2, interval: 500 };
const alerts = worker.bindQueue({ name: 'alerts', priority: 1, concurrency: 1, weight: 3 });
const emails = worker.bindQueue({ name: 'emails', priority: 2, rateLimit: EMAIL_RATE, weight: 2 });
const reports = worker.bindPriorityQueue({ name: 'reports', priority: 3 });
const ordersTopic = new Topic<Task>();
const orders = worker.subscribe(ordersTopic, { name: 'orders' });
for (const source of [alerts, emails, reports, orders]) sources.set(source.name, source);

const kinds: Record<string, string> = { alerts: 'queue', emails: 'queue', reports: 'priority queue', orders: 'subscription' };

// ------------------------------------------------------------------ why a source was picked

function whyNot(seen: Seen): string {
  if (seen.due === 0) return seen.delayed > 0 ? `${seen.delayed} delayed, none due` : 'empty';
  if (seen.name === 'alerts') return `at cap ${seen.running}/1`;
  if (seen.name === 'emails') return 'rate-limited';
  return 'not eligible';
}

function skipped(list: Seen[]): string {
  return list.length === 0 ? '' : `; skipped ${list.map((seen) => `${seen.name} (${whyNot(seen)})`).join(', ')}`;
}

let lastServed: string | undefined;

function why(pick: Pick | undefined, source: string): string {
  if (pick === undefined || pick.picked !== source) return 'the only source bound';
  const list = pick.list;
  const at = list.findIndex((seen) => seen.name === source);
  const chosen = list[at] as Seen;
  const eligible = list.filter((seen) => seen.eligible);
  switch (strategyName) {
    case 'Priority':
      return at === 0 ? 'first eligible in the list' : `first eligible${skipped(list.slice(0, at))}`;
    case 'RoundRobin': {
      const from = lastServed === undefined ? 0 : list.findIndex((seen) => seen.name === lastServed) + 1;
      const passed: Seen[] = [];
      for (let i = from % list.length; i !== at; i = (i + 1) % list.length) passed.push(list[i] as Seen);
      return `its turn${lastServed === undefined ? ' (first turn)' : ` after ${lastServed}`}${skipped(passed)}`;
    }
    case 'MaxLen':
    case 'MinLen': {
      const ties = eligible.filter((seen) => seen.due === chosen.due && seen !== chosen);
      const most = strategyName === 'MaxLen' ? 'most' : 'fewest';
      const tie = ties.length > 0 ? `; tied with ${ties.map((s) => s.name).join(', ')}, first in the list wins` : '';
      return `${most} due jobs among the eligible (${chosen.due})${tie}`;
    }
    case 'Weighted': {
      const total = eligible.reduce((sum, seen) => sum + seen.weight, 0);
      return `highest credit; weight ${chosen.weight} of ${total} among ${eligible.map((s) => s.name).join(', ')}`;
    }
    default:
      return 'picked by the strategy';
  }
}

// ------------------------------------------------------------------ watch it run

let t0 = Date.now();
const elapsed = () => Date.now() - t0;
const starts = new Map<string, number[]>();
const maxRunning = new Map<string, number>();
let maxInFlight = 0;

console.log(`worker "${worker.name}": ${worker.concurrency} slots, strategy ${worker.strategy.name}\n`);
const header = () => console.log(`${'start'.padStart(7)}  slots  ${'source'.padEnd(7)}  ${'job'.padEnd(23)}  why`);

let completed = 0;
let lateStartedAt = NaN;
worker.on('completed', () => completed++);
worker.on('active', (job) => {
  const pick = lastPick;
  lastPick = undefined;
  const now = elapsed();
  (starts.get(job.source) ?? starts.set(job.source, []).get(job.source)!).push(now);
  const running = pick?.list.find((seen) => seen.name === job.source)?.running ?? 0;
  maxRunning.set(job.source, Math.max(maxRunning.get(job.source) ?? 0, running + 1));
  maxInFlight = Math.max(maxInFlight, worker.numProcessing);
  console.log(
    `${`+${now}ms`.padStart(7)}  ${`${worker.numProcessing}/${worker.concurrency}`.padStart(5)}  ${job.source.padEnd(7)}  ` +
      `${job.data.label.padEnd(23)}  ${why(pick, job.source)}`,
  );
  lastServed = job.source;
  if (job.id === late.id) lateStartedAt = now;
});

// ------------------------------------------------------------------ the work

alerts.add({ label: 'cpu high on db-1', ms: 300 });
alerts.add({ label: 'disk 91% on db-2', ms: 300 });
const late = alerts.add({ label: 'disk full (delay 600ms)', ms: 300 }, { delay: 600 });
console.log(`Before start(): the delayed alert's status is "${late.status}", the worker's "${worker.status}".\n`);
reports.add({ label: 'weekly digest (prio 5)', ms: 200 }, 5);
reports.add({ label: 'invoice run (prio 1)', ms: 200 }, 1);
reports.add({ label: 'audit export (prio 3)', ms: 200 }, 3);
for (const id of [1041, 1042]) ordersTopic.publish({ label: `order #${id}`, ms: 150 });
for (const to of ['ada', 'bob', 'cy', 'dee', 'eve']) emails.add({ label: `welcome mail to ${to}`, ms: 100 });

header();
t0 = Date.now();
worker.start();
await worker.waitUntilIdle();

// ------------------------------------------------------------------ summary

/**
 * The times above are read in the 'active' listener, which can run a few ms after the worker read
 * its clock to decide the start (earlier listeners run in between, and the machine may be busy), so
 * windows are measured `SLACK_MS` short. The rule itself is checked to the millisecond, on virtual time, in
 * test/timing.test.ts.
 */
const SLACK_MS = 10;

/** Most starts within any window of `interval` ms, as seen from the listener. */
function busiestWindow(times: number[], interval: number): number {
  let best = 0;
  for (let i = 0; i < times.length; i++) {
    let j = i;
    while (j < times.length && (times[j] as number) - (times[i] as number) < interval - SLACK_MS) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

const total = [...starts.values()].reduce((sum, list) => sum + list.length, 0);
console.log(`\n${'source'.padEnd(7)}  ${'kind'.padEnd(14)}  rank  ${'limit'.padEnd(19)}  ${'observed'.padEnd(22)}  jobs  started at (ms)`);
for (const source of sources.values()) {
  const times = starts.get(source.name) ?? [];
  let limit = '-';
  let observed = '';
  if (source.name === 'alerts') {
    limit = '1 running at once';
    observed = `at most ${maxRunning.get('alerts') ?? 0} running`;
  }
  if (source.name === 'emails') {
    limit = `${EMAIL_RATE.limit} starts per ${EMAIL_RATE.interval}ms`;
    observed = `at most ${busiestWindow(times, EMAIL_RATE.interval)} in any ${EMAIL_RATE.interval}ms`;
  }
  console.log(
    `${source.name.padEnd(7)}  ${(kinds[source.name] ?? '').padEnd(14)}  ${String(source.priority ?? '-').padStart(4)}  ` +
      `${limit.padEnd(19)}  ${observed.padEnd(22)}  ${String(times.length).padStart(4)}  ${times.join(', ')}`,
  );
}
console.log(
  `\n${total} jobs started, ${completed} completed in ${elapsed()} ms; at most ${maxInFlight} of ${worker.concurrency} slots in use.` +
    `\nThe delayed alert (delay 600 ms) started at +${lateStartedAt}ms; its status is "${late.status}", the worker's "${worker.status}".`,
);
