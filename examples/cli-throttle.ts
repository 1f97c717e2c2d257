// A CLI that throttles shell commands: one queue per input file, one worker, a strategy.
//
//   npm run build
//   npx tsx examples/cli-throttle.ts --strategy RoundRobin --concurrency 2 examples/cli-throttle/*.txt
//
// Each file holds one shell command per line (blank lines and `#` comments are skipped). Each
// file becomes a queue; `--concurrency` commands run at once (child processes, through a shell)
// and `--strategy` decides which file gives the next command when a slot frees: Priority drains
// the files in the order given, RoundRobin alternates between them, MaxLen / MinLen follow the
// backlog, Weighted shares evenly (every file has weight 1).
//
// On a terminal it shows a live progress bar (cli-progress); when stdout is not a TTY (a pipe, a
// CI log) it prints one plain line per finished command instead. At the end: the order commands
// started in and a summary per file (ok, failed, time). Exit code 1 if any command failed, 2 for
// bad usage. Ctrl-C cancels: waiting commands are dropped and running ones are killed.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { Strategy, Worker, type Job, type JobHandle, type Queue } from 'qmux';

// ------------------------------------------------------------------ arguments

const STRATEGIES: Record<string, Strategy> = { ...Strategy };
const USAGE = `usage: cli-throttle [--strategy ${Object.keys(STRATEGIES).join('|')}] [--concurrency <n>] <file>...`;

function fail(message: string): never {
  console.error(`cli-throttle: ${message}\n${USAGE}`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      strategy: { type: 'string', default: 'Priority' },
      concurrency: { type: 'string', default: '2' },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (error) {
  fail((error as Error).message);
}
if (parsed.values.help) {
  console.log(USAGE);
  process.exit(0);
}
const strategy = STRATEGIES[parsed.values.strategy];
if (strategy === undefined) fail(`unknown strategy "${parsed.values.strategy}"`);
const concurrency = Number(parsed.values.concurrency);
if (!Number.isInteger(concurrency) || concurrency < 1) fail(`--concurrency must be a positive integer, got "${parsed.values.concurrency}"`);
const files = parsed.positionals;
if (files.length === 0) fail('give at least one input file');

// ------------------------------------------------------------------ the work

interface Command {
  file: string;
  line: number;
  command: string;
}

interface Done {
  ms: number;
}

/** Runs `command` through a shell; resolves on exit code 0, rejects otherwise. Killed when the job is cancelled. */
function run(job: Job<Command>): Promise<Done> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(job.data.command, { shell: true, stdio: ['ignore', 'ignore', 'pipe'], signal: job.signal });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-500)));
    child.on('error', reject); // could not spawn, or aborted
    child.on('close', (code, signal) => {
      if (code === 0) resolve({ ms: performance.now() - started });
      else reject(new Error(`${signal ? `killed by ${signal}` : `exit code ${code}`}${stderr.trim() ? `: ${stderr.trim().split('\n').pop()}` : ''}`));
    });
  });
}

const worker = new Worker(run, { concurrency, strategy, autoRun: false });

interface FileReport {
  name: string;
  queue: Queue<Command, Done>;
  handles: JobHandle<Done>[];
  ok: number;
  failed: number;
  cancelled: number;
  /** Sum of its commands' run times, ms. */
  busyMs: number;
  /** When its last command finished, ms since the start. */
  doneAt: number;
}

const reports: FileReport[] = [];
for (const file of files) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    fail(`cannot read ${file}: ${(error as Error).message}`);
  }
  let name = basename(file);
  for (let n = 2; reports.some((r) => r.name === name); n++) name = `${basename(file)} (${n})`;
  const report: FileReport = { name, queue: worker.bindQueue({ name }), handles: [], ok: 0, failed: 0, cancelled: 0, busyMs: 0, doneAt: 0 };
  text.split('\n').forEach((raw, i) => {
    const command = raw.trim();
    if (command === '' || command.startsWith('#')) return;
    report.handles.push(report.queue.add({ file: name, line: i + 1, command }));
  });
  reports.push(report);
}
const total = reports.reduce((sum, r) => sum + r.handles.length, 0);
const byName = new Map(reports.map((r) => [r.name, r]));

// ------------------------------------------------------------------ progress

const tty = process.stdout.isTTY === true;
const bar = tty
  ? new cliProgress.SingleBar(
      { format: ' {bar} {value}/{total} | ok {ok} | failed {failed} | {last}', stream: process.stdout, hideCursor: true },
      cliProgress.Presets.shades_classic,
    )
  : undefined;
let finished = 0;
let okCount = 0;
let failedCount = 0;
const failures: string[] = [];
const startOrder: string[] = [];
const t0 = performance.now();
const short = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

function progress(data: Command, outcome: string, detail: string): void {
  finished++;
  if (bar !== undefined) {
    bar.update(finished, { ok: okCount, failed: failedCount, last: short(`${data.file}:${data.line} ${data.command}`, 40) });
  } else {
    const count = `[${String(finished).padStart(String(total).length)}/${total}]`;
    console.log(`${count} ${outcome.padEnd(6)} ${data.file}:${data.line}  ${short(data.command, 50)}  (${detail})`);
  }
}

worker.on('active', (job) => startOrder.push(`${job.data.file.replace(/\.[^.]*$/, '')}:${job.data.line}`));
worker.on('completed', (job, done) => {
  const report = byName.get(job.source) as FileReport;
  report.ok++;
  report.busyMs += done.ms;
  report.doneAt = performance.now() - t0;
  okCount++;
  progress(job.data, 'ok', `${Math.round(done.ms)} ms`);
});
worker.on('failed', (job, error) => {
  const report = byName.get(job.source) as FileReport;
  report.failed++;
  report.doneAt = performance.now() - t0;
  failedCount++;
  failures.push(`${job.data.file}:${job.data.line}  ${job.data.command}\n    ${(error as Error).message}`);
  progress(job.data, 'FAILED', (error as Error).message);
});
worker.on('cancelled', (job) => {
  (byName.get(job.source) as FileReport).cancelled++;
});

// Ctrl-C: drop what waits, kill what runs (their signals abort the child processes).
process.once('SIGINT', () => {
  for (const report of reports) {
    report.queue.purge();
    for (const handle of report.handles) handle.cancel('interrupted');
  }
});

console.log(`${total} commands from ${reports.length} file(s), strategy ${strategy.name}, concurrency ${concurrency}`);
bar?.start(total, 0, { ok: 0, failed: 0, last: '' });
worker.start();
await worker.waitUntilIdle();
bar?.stop();

// ------------------------------------------------------------------ summary

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
console.log(`\nstart order: ${startOrder.join(' ')}`);
const width = Math.max(4, ...reports.map((r) => r.name.length));
console.log(`\nSummary (${seconds(performance.now() - t0)} in all):`);
console.log(`  ${'file'.padEnd(width)}  ${'ok'.padStart(4)}  ${'failed'.padStart(6)}  ${'time'.padStart(8)}  ${'done at'.padStart(8)}`);
for (const r of reports) {
  const cancelled = r.cancelled > 0 ? `  (${r.cancelled} cancelled)` : '';
  console.log(
    `  ${r.name.padEnd(width)}  ${String(r.ok).padStart(4)}  ${String(r.failed).padStart(6)}  ${seconds(r.busyMs).padStart(8)}  ${seconds(r.doneAt).padStart(8)}${cancelled}`,
  );
}
console.log(`  ${'all'.padEnd(width)}  ${String(okCount).padStart(4)}  ${String(failedCount).padStart(6)}`);
console.log("  (time: the sum of its commands' run times; done at: when its last command finished)");
if (failures.length > 0) console.log(`\nFailed:\n  ${failures.join('\n  ')}`);
process.exitCode = failedCount > 0 || reports.some((r) => r.cancelled > 0) ? 1 : 0;
