/**
 * Every program in examples/ runs as a child process (`node --import tsx`), exits 0 and prints
 * what it promises. Examples import 'qmux', which resolves to dist/ through the package's own
 * `exports` (npm test builds dist first). They run one at a time: several are timing demos, and
 * the machine has 2 cores. Assertions stick to what does not depend on scheduling.
 *
 * Those that need neither threads, Redis nor a browser run again on Bun and on Deno (SPEC 14),
 * which must print the same lines as Node did, numbers aside (see `shape`).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_MISSING_NOTICE, redisRequired, redisServerInstalled } from './support/redis-server.js';
import { OTHER_RUNTIMES, runtimeMissingNotice, runtimesRequired, type OtherRuntime } from './support/runtimes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const EXAMPLES = join(ROOT, 'examples');
/** Modules that examples import (thread handlers and the like), not programs. */
const HELPER = /(^|-)handler\.[cm]?[jt]s$/;
/** Generous: threads-cpu.ts counts primes twice (about 3.5 s alone) and others share the cores. */
const PER_EXAMPLE_TIMEOUT_MS = 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an example with Node (through tsx), or with Bun or Deno, which run TypeScript themselves. */
function runExample(file: string, args: string[] = [], runtime?: OtherRuntime): Promise<Run> {
  const script = join(EXAMPLES, file);
  const [binary, argv] = runtime?.binary === undefined ? [process.execPath, ['--import', 'tsx', script]] : [runtime.binary, runtime.args(script)];
  return new Promise((resolve) => {
    execFile(
      binary,
      [...argv, ...args],
      { cwd: ROOT, timeout: PER_EXAMPLE_TIMEOUT_MS, maxBuffer: 10 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr: error?.killed ? `${stderr}\n[killed after ${PER_EXAMPLE_TIMEOUT_MS} ms]` : stderr });
      },
    );
  });
}

const lines = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '');

const SAMPLES = readdirSync(join(EXAMPLES, 'cli-throttle'))
  .filter((file) => file.endsWith('.txt'))
  .sort()
  .map((file) => join('examples', 'cli-throttle', file));

/**
 * A rate limit of `limit` starts per `interval` ms, counted from the first start (which is no
 * earlier than the clock reading the example takes before adding), puts start number
 * `limit * m + 1` at or after `m * interval` ms. A listener or handler reads the clock only after
 * the worker decided a start, so this bound holds exactly on the times an example prints (also when
 * rounded to 10 ms, since the bounds are multiples of 10), however loaded the machine.
 */
function expectPaced(times: number[], limit: number, interval: number): void {
  for (let k = limit; k < times.length; k += limit) {
    expect(times[k], `start ${k + 1} of ${times.join(', ')}`).toBeGreaterThanOrEqual((k / limit) * interval);
  }
}

/** {@link expectPaced} on the "Start times" line of one API in examples/rate-limit.ts. */
function expectPacedStarts(out: string, api: string, limit: number, interval: number): void {
  const times = new RegExp(`^\\s+${api}\\s+([\\d ]+)$`, 'm').exec(out)?.[1]?.trim().split(' ').map(Number);
  expect(times, `start times of ${api}`).toBeDefined();
  expectPaced(times!, limit, interval);
}

/** What each program must print, beyond exiting 0. */
const EXPECT: Record<string, { args?: string[]; check(stdout: string): void }> = {
  'bullmq-shared.ts': {
    check(out) {
      expect(out).toMatch(/^using redis-server started by this example on port \d+$/m);
      let shared = 0;
      for (const name of ['a', 'b', 'c']) {
        // Each worker's local priority queue goes first, in its own priority order.
        const match = new RegExp(`^${name} ran local: ${name}-P0 page, ${name}-P1 resize, ${name}-P2 cleanup, then (\\d+) shared jobs$`, 'm').exec(
          out,
        );
        expect(match, out).not.toBeNull();
        shared += Number(match?.[1]);
      }
      expect(shared).toBe(60);
      expect(out).toContain('shared: 60 jobs, each run once, 60 completed in BullMQ');
    },
  },
  'strategies-priority.ts': {
    check: (out) => expect(lines(out)).toEqual(['alert 1', 'alert 2', 'report 1', 'email 1', 'email 2']),
  },
  'strategies-round-robin.ts': {
    check: (out) => expect(lines(out)).toEqual(['alert 1', 'report 1', 'email 1', 'alert 2', 'email 2', 'email 3']),
  },
  'strategies-length.ts': {
    check: (out) => expect(lines(out)).toEqual(['MaxLen: email alert email alert report email', 'MinLen: report alert alert email email email']),
  },
  'weighted.ts': {
    check: (out) => {
      expect(out).toContain('1-10  a g a a g a i a g a');
      expect(out).toContain('11-20  a g a a g a i a g a');
      expect(out).toMatch(/acme\s+weight 6\s+12 jobs\s+60%/);
    },
  },
  'tenants.ts': {
    check: (out) => {
      // The table is computed on virtual time (job slots), so it is the same on every run.
      const row = (tenant: string): number[] => {
        const match = new RegExp(`^\\| ${tenant}\\s+\\| (\\d+)\\s+\\|\\s+([\\d.]+) / ([\\d.]+) \\|\\s+([\\d.]+) / ([\\d.]+) \\|$`, 'm').exec(out);
        expect(match, `the row of ${tenant}`).not.toBeNull();
        return (match as RegExpExecArray).slice(1).map(Number);
      };
      expect(row('big')[0]).toBe(10_000);
      for (const tenant of ['t1', 't2', 't3', 't4', 't5']) {
        const [jobs, , plainP99, keyedP50, keyedP99] = row(tenant) as [number, number, number, number, number];
        expect(jobs).toBe(20);
        // Behind the backlog on a plain queue; about one turn per job with keys (6 tenants, 4 slots).
        expect(plainP99).toBeGreaterThan(2000);
        expect(keyedP99).toBeLessThan(40);
        expect(keyedP50).toBeLessThan(keyedP99);
      }
    },
  },
  'topic-fanout.ts': {
    check: (out) => {
      expect(out).toContain('publish A-0 with 0 subscribers -> 0 jobs');
      expect(out).toContain('publish A-1 with 2 subscribers -> 2 jobs');
      expect(out).toContain('results: "invoice for A-2", "parcel for A-2"');
      expect(out).toContain('statuses: succeeded, succeeded');
      expect(out).toContain('publish A-4 with 1 subscriber -> 1 job');
      expect(out).toContain('publish A-5 with 0 subscribers -> 0 jobs');
    },
  },
  'demo.ts': {
    check: (out) => {
      expect(out).toContain('worker "demo": 3 slots, strategy Priority');
      expect(out).toMatch(/13 jobs started, 13 completed in \d+ ms; at most [1-3] of 3 slots in use\./);
      expect(out).toMatch(/The delayed alert \(delay 600 ms\) started at \+\d+ms; its status is "succeeded", the worker's "idle"\./);
      expect(out).toMatch(/alerts .* at most 1 running/);
      // The listener's times lag the worker's clock reading, so the busiest-window count is not
      // exact here; what is exact is the lower bound the limit (2 per 500 ms from the start) puts
      // on the 3rd and 5th starts, since a listener never reads the clock before the decision.
      const emails = /^emails .* {2}(\d+(?:, \d+)*)$/m.exec(out)?.[1]?.split(', ').map(Number);
      expect(emails).toHaveLength(5);
      expectPaced(emails!, 2, 500);
    },
  },
  'threads-cpu.ts': {
    check: (out) => {
      const async = /async worker[^\n]*:\s+(\d+) primes/.exec(out);
      const threads = /threads worker[^\n]*:\s+(\d+) primes/.exec(out);
      expect(async?.[1]).toBe('348513'); // primes below 5,000,000
      expect(threads?.[1]).toBe('348513');
      expect(out).toMatch(/speed-up: [\d.]+x/);
    },
  },
  'otel-trace.ts': {
    check: (out) => {
      // Each request's trace holds its own jobs: a retry is a second child of the same request,
      // and the handler's span nests under its attempt.
      const [ada, bob] = out.split('trace of POST /signup bob');
      expect(ada).toContain('  POST /signup ada\n    process emails  attempt 1  failed: SMTP 421 try again later\n');
      expect(ada).toContain('    process emails  attempt 2  succeeded\n      smtp send ada@example.com\n');
      expect(ada).toContain('    process thumbnails  attempt 1  succeeded\n');
      expect(ada).not.toContain('bob');
      expect(bob).toContain('  POST /signup bob\n    process emails  attempt 1  succeeded\n      smtp send bob@example.com\n');
      expect(bob).toContain('    process thumbnails  attempt 1  succeeded');
      expect(bob).not.toContain('ada');
    },
  },
  'retries.ts': {
    check: (out) => {
      expect(out).toContain('pay-1  attempt 1 failed (HTTP 503), retry in 50 ms');
      expect(out).toContain('pay-1  attempt 2 failed (HTTP 503), retry in 100 ms');
      expect(out).toContain('pay-1  attempt 3 succeeded: receipt for pay-1');
      expect(out).toContain('pay-2  attempt 1 failed (HTTP 400), not retried: failed for good');
      expect(out).toContain('pay-4  attempt 4 failed (HTTP 500), out of attempts: failed for good');
      // exponential, capped at maxDelay 400
      expect(out).toContain('pay-5  attempt 4 failed (HTTP 503), retry in 400 ms');
      expect(out).toContain('pay-5  attempt 5 failed (HTTP 503), retry in 400 ms');
      expect(out).toContain('pay-5  attempt 6 succeeded');
      expect(out).toContain('statuses: pay-1=succeeded, pay-2=failed, pay-3=succeeded, pay-4=failed, pay-5=succeeded');
      expect(out).toContain('dead letters (2):');
      expect(out).toContain('redrive pay-4 -> receipt for pay-4 on attempt 1');
      expect(out).toContain('dead letters left: pay-2');
    },
  },
  'graceful-shutdown.ts': {
    check: (out) => {
      expect(out).toContain('SIGINT: shutting down, waiting up to 1000 ms for running jobs');
      expect(out).toContain('mailer: newsletter (600 ms) done');
      expect(out).toContain('reports: quarterly report (10 s) cancelled (its signal aborted)');
      expect(out).toContain('shutdown result: stopped [mailer], unfinished [reports]');
      expect(out).toContain('the quarterly report is cancelled: CancelledError');
      expect(out).toContain('reports: stopped, 2 job(s) still queued');
      // The newsletter finished during the shutdown, before its result.
      expect(out.indexOf('newsletter (600 ms) done')).toBeGreaterThan(out.indexOf('SIGINT: shutting down'));
      expect(out.indexOf('newsletter (600 ms) done')).toBeLessThan(out.indexOf('shutdown result'));
    },
  },
  'rate-limit.ts': {
    check: (out) => {
      // The busiest-window counts come from handler clock readings, which lag the worker's; they
      // are printed, and the exact consequence of each limit is checked on the start times.
      expect(out).toMatch(/github: 9 calls, at most \d started in any 300 ms \(limit 3\), at most [12] in flight \(limit 2\)/);
      expect(out).toMatch(/weather: 10 calls, at most \d+ started in any 300 ms \(limit 5\), at most [1-5] in flight \(limit 5\)/);
      expectPacedStarts(out, 'github', 3, 300);
      expectPacedStarts(out, 'weather', 5, 300);
      expect(out).toMatch(/search: 6 calls, no rate limit, at most 1 in flight \(limit 1\)/);
      expect(out).toMatch(/25 of 25 calls answered 200/);
    },
  },
  'delayed.ts': {
    check: (out) => {
      expect(out).toContain('statuses after add: now=waiting, +300=delayed, +100=delayed, +200 (runAt)=delayed, past runAt=waiting');
      expect(out).toContain('ran: now, past runAt, +100, +200 (runAt), +300');
      expect(out).toContain('jobs started before their due time: 0');
      expect(out).toContain('one slot: long job (150 ms) -> due at +50 -> added at +100, due at once');
    },
  },
  'priority-queue.ts': {
    check: (out) =>
      expect(lines(out)).toEqual([
        'tickets alone: P0 outage, P0 data loss, P1 login slow, P1 export broken, P2 typo, P3 feature idea',
        'addAll results, in add order: done P3 wishlist, done P0 breach, done P1 billing',
        'with a ranked queue: INCIDENT db down, INCIDENT dns, P0 outage, P1 login slow, P2 typo',
      ]),
  },
  'cancellation.ts': {
    check: (out) => {
      expect(out).toContain('before: big.iso running, small.txt waiting, unwanted.zip waiting');
      expect(out).toContain('big.cancel() again -> false (already settled)');
      expect(out).toContain('unwanted.zip: cancelled, rejected with CancelledError (qmux: job cancelled: user changed their mind)');
      expect(out).toContain('big.iso: cancelled, rejected with CancelledError');
      expect(out).toContain('small.txt: succeeded, result 200 OK');
      expect(out).toContain('report.pdf: cancelled, rejected with CancelledError (qmux: job cancelled: client disconnected)');
      expect(out).toContain('late.pdf: cancelled, rejected with CancelledError (qmux: job cancelled: too late)');
      expect(out).toContain('purge() removed 3 waiting jobs; queue length now 0');
      expect(out).toContain('counters: 8 added, 3 started, 1 succeeded, 7 cancelled');
      // The running jobs' handlers saw their signals abort: big.iso and report.pdf.
      expect(out.match(/the handler saw its signal abort: CancelledError/g)).toHaveLength(2);
    },
  },
  'admin.ts': {
    check: (out) => {
      expect(out).toContain('GET /health\n  -> 200 {"status":"healthy","workers":["mailer","thumbnails"]}');
      expect(out).toContain('POST /workers/mailer/pause\n  -> 200 {"name":"mailer","status":"paused"}');
      expect(out).toContain('PUT /workers/mailer/concurrency {"concurrency":4}\n  -> 200 {"name":"mailer","concurrency":4}');
      expect(out).toContain('-> 200 {"name":"mailer","concurrency":"Infinity"}');
      expect(out).toContain('POST /workers/thumbnails/stop\n  -> 200 {"name":"thumbnails","status":"stopping"}');
      expect(out).toMatch(/POST \/workers\/thumbnails\/resume\n {2}-> 409 \{"error":"qmux: cannot resume\(\)/);
      expect(out).toMatch(/\{"concurrency":0\}\n {2}-> 400 \{"error":/);
      expect(out).toMatch(/GET \/workers\/nobody\n {2}-> 404 \{"error":/);
      expect(out).toContain('DELETE /workers/mailer\n  -> 405 (Allow: GET, HEAD)');
      expect(out).toContain('server closed, workers stopped');
    },
  },
  'dashboard.ts': {
    args: ['--for', '2'],
    check: (out) => {
      expect(out).toMatch(/^dashboard at http:\/\/127\.0\.0\.1:\d+\/$/m);
      expect(out).toMatch(/^metrics at http:\/\/127\.0\.0\.1:\d+\/metrics$/m);
      expect(out).toContain('qmux_jobs_started_total{worker="mailer",source="transactional"}');
      expect(out).toContain('qmux_worker_status{worker="reports",status="paused"}');
      expect(out).toContain('shut down');
    },
  },
  'stats.ts': {
    check: (out) => {
      expect(out).toContain('counters: added 104, started 113, succeeded 104, failed 0, retried 9, dead 0, cancelled 0');
      expect(out).toMatch(/wait time over [1-9]\d* timed jobs \(every job, or 1 in 64 when busy\): p50 [\d.]+ms/);
      expect(out).toMatch(/run time over [1-9]\d* timed jobs \(every job, or 1 in 64 when busy\): p50 [\d.]+ms/);
      expect(out).toContain('now: status idle, waiting 0, oldest due job none');
      expect(out).toContain('registry.stats() has: api');
      // The batch queue starves behind the interactive one: its oldest due job shows an age.
      expect(out).toMatch(/\s\d+ms\s+\d+\n/);
    },
  },
  'progress.ts': {
    check: (out) => {
      // Not a TTY here: one line per report, each job's in order, up to its total.
      for (const [file, total] of [
        ['a.bin', 4],
        ['b.bin', 6],
        ['c.bin', 3],
        ['d.bin', 5],
      ] as const) {
        const reports = out.match(new RegExp(`^${file.replace('.', '\\.')} +[#.]+ +(\\d+)/${total}$`, 'gm')) ?? [];
        expect(reports.map((line) => Number(/(\d+)\//.exec(line)?.[1]))).toEqual(Array.from({ length: total }, (_, i) => i + 1));
        expect(out).toContain(`${file}: ${total} chunks`);
        expect(out).toContain(`${file} handle.progress: ${total}/${total}, status succeeded`);
      }
    },
  },
  'cli-throttle.ts': {
    args: ['--strategy', 'RoundRobin', '--concurrency', '2', ...SAMPLES],
    check: (out) => {
      expect(out).toContain('9 commands from 2 file(s), strategy RoundRobin, concurrency 2');
      // Not a TTY here: plain progress lines instead of the bar.
      expect(out.match(/^\[\d\/9\] ok {5}(fast|slow)\.txt:\d+ {2}/gm)).toHaveLength(9);
      // RoundRobin alternates between the files while both have work.
      expect(out).toContain('start order: fast:2 slow:2 fast:3 slow:3 fast:4 slow:4 fast:6 slow:5 fast:7');
      expect(out).toMatch(/fast\.txt\s+5\s+0\s+[\d.]+ s/);
      expect(out).toMatch(/slow\.txt\s+4\s+0\s+[\d.]+ s/);
      expect(out).toMatch(/all\s+9\s+0/);
    },
  },
};

/** Examples that need a redis-server: skipped with a notice without one, unless QMUX_REQUIRE_REDIS=1. */
const NEEDS_REDIS = new Set(['bullmq-shared.ts']);
const redisOk = redisServerInstalled || redisRequired;
if (!redisOk) console.warn(`${REDIS_MISSING_NOTICE} (examples: ${[...NEEDS_REDIS].join(', ')})`);

const programs = readdirSync(EXAMPLES)
  .filter((file) => /\.ts$/.test(file) && !file.endsWith('.d.ts') && !HELPER.test(file))
  .filter((file) => redisOk || !NEEDS_REDIS.has(file))
  .sort();

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does) before this file');
});

describe('examples/', () => {
  it('has the per-feature programs', () => {
    for (const name of Object.keys(EXPECT)) {
      if (name === 'threads-cpu.ts' && !programs.includes(name)) continue; // added separately
      if (NEEDS_REDIS.has(name) && !redisOk) continue;
      expect(programs).toContain(name);
    }
    expect(SAMPLES.length).toBeGreaterThanOrEqual(2);
  });

  it.each(programs)(
    '%s exits 0 and prints what it promises',
    async (file) => {
      const expected = EXPECT[file];
      const run = await runExample(file, expected?.args);
      printedOnNode.set(file, run.stdout);
      expect(run.code, `exit code; stderr:\n${run.stderr}`).toBe(0);
      // An example that ends with a warning (a QmuxWarning such as QMUX_STRANDED_JOBS, or Node's own) teaches the wrong ending.
      expect(run.stderr, 'stderr').not.toMatch(/Warning/);
      expect(run.stdout.trim().length).toBeGreaterThan(0);
      // A program with no entry above is still run: it must exit 0 and print something.
      expected?.check(run.stdout);
    },
    PER_EXAMPLE_TIMEOUT_MS + 10_000,
  );
});

/** Examples that run threads, Redis or a browser: Bun and Deno are not asked to run them (SPEC 14). */
const NODE_ONLY = new Set(['threads-cpu.ts', 'bullmq-shared.ts', 'dashboard.ts']);
/** Examples whose lines come in the order their commands happen to finish: compared as sets of distinct lines. */
const ORDER_BY_TIMING = new Set(['cli-throttle.ts']);
/** What each example printed on Node in the test above, to compare Bun's and Deno's with. */
const printedOnNode = new Map<string, string>();

/**
 * The lines of an example's output with what timing decides taken out: each number (with its
 * unit, or the dash of an empty cell) reads `#`, runs of spaces (column padding) read as one, and a
 * line repeated on the next (a table row per tick) counts once.
 */
function shape(text: string): string[] {
  const shaped = lines(text).map((line) =>
    line
      .replace(/\d+(?:\.\d+)?(?:ms|s|%)?|(?<=\s|^)-(?=\s|$)/g, '#')
      .replace(/\s+/g, ' ')
      .trim(),
  );
  return shaped.filter((line, at) => at === 0 || line !== shaped[at - 1]);
}

describe.each(OTHER_RUNTIMES)('examples/ on $name', (runtime) => {
  const portable = programs.filter((file) => !NODE_ONLY.has(file));
  if (runtime.binary === undefined && !runtimesRequired) {
    console.warn(runtimeMissingNotice(runtime));
    it.skip(`${runtime.name} is not available`, () => {});
    return;
  }
  it.each(portable)(
    `%s prints on ${runtime.name} what it prints on Node`,
    async (file) => {
      expect(runtime.binary, runtimeMissingNotice(runtime)).toBeDefined();
      const expected = EXPECT[file];
      const onNode = printedOnNode.get(file) ?? (await runExample(file, expected?.args)).stdout;
      const run = await runExample(file, expected?.args, runtime);
      expect(run.code, `exit code; stderr:\n${run.stderr}`).toBe(0);
      const distinct = (text: string): string[] => [...new Set(shape(text))].sort();
      if (ORDER_BY_TIMING.has(file)) expect(distinct(run.stdout)).toEqual(distinct(onNode));
      else expect(shape(run.stdout)).toEqual(shape(onNode));
      expected?.check(run.stdout);
    },
    2 * PER_EXAMPLE_TIMEOUT_MS + 10_000,
  );
});

describe('examples/cli-throttle.ts, failures and usage', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'qmux-cli-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports failed commands in the summary and exits 1', async () => {
    const file = join(dir, 'mixed.txt');
    writeFileSync(file, 'echo fine\nexit 3\n# a comment\n\nnode -e "process.exit(0)"\n');
    const run = await runExample('cli-throttle.ts', ['--concurrency', '1', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('3 commands from 1 file(s), strategy Priority, concurrency 1');
    expect(run.stdout).toMatch(/\[2\/3\] FAILED mixed\.txt:2 {2}exit 3 {2}\(exit code 3\)/);
    expect(run.stdout).toMatch(/mixed\.txt\s+2\s+1\s/);
    expect(run.stdout).toContain('start order: mixed:1 mixed:2 mixed:5');
    expect(run.stdout).toContain('Failed:');
  });

  it.each([
    [['--strategy', 'Fastest', 'x.txt'], /unknown strategy "Fastest"/],
    [['--concurrency', '0', 'x.txt'], /--concurrency must be a positive integer/],
    [[], /give at least one input file/],
    [['--nope'], /Unknown option '--nope'/],
  ])('exits 2 with a usage message for %j', async (args, message) => {
    const run = await runExample('cli-throttle.ts', args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain('usage: cli-throttle');
  });
});
