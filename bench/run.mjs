// Benchmark orchestrator. `npm run bench` builds qmux and runs this file.
//
//   node bench/run.mjs [--quick] [--only noop,result] [--runs N] [--write] [--node /path/to/node]
//
// Every cell (workload x row x library) runs in a fresh Node process (bench/cell.mjs), which warms
// up and then measures once. The libraries of one row are alternated round-robin within each run
// (and the starting library rotates from run to run), each cell is repeated N times, and the
// median is reported. Progress goes to stderr; the tables go to stdout (and to bench/RESULTS.md
// with --write).

import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import os from 'node:os';
import { WORKLOADS, WORKLOAD_IDS, LABELS } from './workloads.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CELL = fileURLToPath(new URL('./cell.mjs', import.meta.url));
const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: node bench/run.mjs [options]   (or: npm run bench -- [options])

  --quick           2 runs per cell and smaller job counts (a smoke run, 30-50 s)
  --only <ids>      comma-separated workload ids: ${WORKLOAD_IDS.join(', ')}
  --runs <N>        runs per cell (default 5, or 2 with --quick); the median is reported
  --write           also write the tables and machine info to bench/RESULTS.md
  --node <path>     the Node binary that runs the cells (default: $QMUX_BENCH_NODE, else this one)
  --help            this text
`;

let opts;
try {
  opts = parseArgs({
    args: process.argv.slice(2),
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      runs: { type: 'string' },
      write: { type: 'boolean', default: false },
      node: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
} catch (err) {
  process.stderr.write(`${err.message}\n\n${USAGE}`);
  process.exit(2);
}
if (opts.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

// The Node that runs every cell: the bench reports Node 24 beside Node 20 (SPEC 14) by running
// the same orchestrator with each.
const NODE = opts.node ?? (process.env.QMUX_BENCH_NODE || process.execPath);
let nodeVersions;
try {
  nodeVersions = JSON.parse(execFileSync(NODE, ['-p', 'JSON.stringify({ node: process.version, v8: process.versions.v8 })'], { encoding: 'utf8' }));
} catch (err) {
  process.stderr.write(`--node / QMUX_BENCH_NODE: cannot run ${NODE}: ${err.message}\n`);
  process.exit(2);
}

const mode = opts.quick ? 'quick' : 'full';
const runs = opts.runs === undefined ? (opts.quick ? 2 : 5) : Number(opts.runs);
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write(`--runs must be a positive integer, got ${opts.runs}\n`);
  process.exit(2);
}
let selected = WORKLOADS;
if (opts.only !== undefined) {
  const ids = opts.only
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = ids.filter((id) => !WORKLOAD_IDS.includes(id));
  if (unknown.length || ids.length === 0) {
    process.stderr.write(`unknown workload id(s): ${unknown.join(', ') || '(none given)'}; known: ${WORKLOAD_IDS.join(', ')}\n`);
    process.exit(2);
  }
  selected = WORKLOADS.filter((w) => ids.includes(w.id));
}
// A cell that hangs (e.g. an idle promise that never resolves while a timer keeps the loop alive)
// is killed after this long and reported as an error; it is not retried in later runs.
const CELL_TIMEOUT_MS = opts.quick ? 30_000 : 180_000;

// ---------------------------------------------------------------------------------------------
// Plan: groups are (workload, row); each group has its variants. Within a run, groups go in
// order and variants round-robin, starting one later each run.

const groups = [];
for (const w of selected) {
  for (const [rowIndex, row] of w.rows.entries()) {
    const variants = w.variants.filter((v) => rowIndex === 0 || !w.rowIndependent?.includes(v));
    groups.push({
      workload: w,
      row,
      cells: variants.map((variant) => ({
        variant,
        spec: { workload: w.id, variant, jobs: w.jobs[mode], concurrency: row.concurrency },
        samples: [],
        errors: [],
        timedOut: false,
      })),
    });
  }
}
const totalCells = groups.reduce((n, g) => n + g.cells.length, 0) * runs;

function runCell(spec) {
  return new Promise((resolve) => {
    const child = spawn(NODE, ['--expose-gc', CELL, JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, CELL_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) {
        resolve({ ok: false, timedOut: true, error: `timed out after ${CELL_TIMEOUT_MS / 1000} s (killed)` });
        return;
      }
      const line = out
        .trim()
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{'));
      if (line) {
        try {
          resolve(JSON.parse(line));
          return;
        } catch {
          /* fall through */
        }
      }
      const lastErr = err.trim().split('\n').filter(Boolean).slice(-1)[0] ?? '';
      resolve({ ok: false, error: `no result (exit ${code ?? signal})${lastErr ? `: ${lastErr}` : ''}` });
    });
  });
}

function fmtSample(kind, r) {
  if (!r.ok) return `ERROR ${r.error}${r.stack ? ` (${r.stack.split(' | ')[0]})` : ''}`;
  if (kind === 'throughput') return `${r.nsPerJob.toFixed(1)} ns/job`;
  if (kind === 'memory') return `${r.queuedBytesPerJob.toFixed(1)} B/job, ${r.nsPerAdd.toFixed(1)} ns/add`;
  return `${r.nsPerAdd.toFixed(1)} ns/add, ${r.timersArmed} timer(s)`;
}

const started = Date.now();
process.stderr.write(
  `qmux bench (${mode}) on Node ${nodeVersions.node}: ${selected.map((w) => w.id).join(', ')}; ${runs} run(s) per cell, ${totalCells} cells\n`,
);
// The commit is taken before any cell runs, when `npm run bench` has just built dist/ from src/:
// edits made while the suite runs do not change what it measures.
const GIT_AT_START = gitDescribe();
if (!existsSync(DIST)) process.stderr.write('warning: dist/index.js is missing; qmux cells will report errors\n');

let done = 0;
for (let r = 0; r < runs; r++) {
  for (const g of groups) {
    const k = r % g.cells.length;
    const order = [...g.cells.slice(k), ...g.cells.slice(0, k)];
    for (const cell of order) {
      done++;
      const tag = `[${String(done).padStart(String(totalCells).length)}/${totalCells}] run ${r + 1}/${runs} ${g.workload.id} ${g.row.label} ${cell.variant}`;
      if (cell.timedOut) {
        process.stderr.write(`${tag}: skipped (timed out earlier)\n`);
        continue;
      }
      const t0 = Date.now();
      const res = await runCell(cell.spec);
      const ms = Date.now() - t0;
      if (res.ok) cell.samples.push(res);
      else {
        cell.errors.push(res.error);
        if (res.timedOut) cell.timedOut = true;
      }
      process.stderr.write(`${tag}: ${fmtSample(g.workload.kind, res)} [${ms} ms]\n`);
    }
  }
}
const wallSeconds = (Date.now() - started) / 1000;

// ---------------------------------------------------------------------------------------------
// Summaries

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const med = (cell, key) => (cell.samples.length ? median(cell.samples.map((s) => s[key])) : undefined);
const spread = (cell, key) => {
  const xs = cell.samples.map((s) => s[key]);
  if (xs.length < 2) return '–';
  return `±${(((Math.max(...xs) - Math.min(...xs)) / 2 / median(xs)) * 100).toFixed(0)}%`;
};
const int = (x) => Math.round(x).toLocaleString('en-US');
const fix = (x, d = 1) => x.toFixed(d);
const errText = (cell) => {
  const e = cell.errors[0] ?? 'no samples';
  return `**error** (${cell.errors.length}/${runs} runs): ${e.replace(/\|/g, '/').slice(0, 160)}`;
};
const bytes = (b) => {
  const a = Math.abs(b);
  if (a >= 1024 * 1024) return `${(b / 1024 / 1024).toFixed(1)} MiB`;
  if (a >= 1024) return `${(b / 1024).toFixed(1)} KiB`;
  return `${Math.round(b)} B`;
};

function table(headers, rows) {
  const lines = [`| ${headers.join(' | ')} |`, `|${headers.map((_h, i) => (i === 0 || i === 1 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const r of rows) lines.push(`| ${r.join(' | ')} |`);
  return lines.join('\n');
}

const notes = [];
function collectNotes(g, cell) {
  const label = `${g.workload.id} ${g.row.label} ${LABELS[cell.variant] ?? cell.variant}`;
  const leftovers = cell.samples.filter((s) => s.leftoverTimers > 0);
  if (leftovers.length && g.workload.kind !== 'delayed') {
    notes.push(
      `${label}: ${leftovers[0].leftoverTimers} Timeout(s) still armed after the queue went idle (${leftovers.length}/${cell.samples.length} runs)`,
    );
  }
  const unh = cell.samples.find((s) => s.unhandledRejections);
  if (unh) notes.push(`${label}: ${unh.unhandledRejections.count} unhandled rejection(s), first: ${unh.unhandledRejections.first}`);
  if (cell.samples.length && cell.errors.length) notes.push(`${label}: ${cell.errors.length} of ${runs} runs failed: ${cell.errors[0]}`);
}

function throughputTable(w) {
  const multiRow = w.rows.length > 1;
  const headers = [
    ...(multiRow ? ['concurrency'] : []),
    'library',
    'jobs/s',
    'ns/job',
    'spread',
    w.ratioLabel,
    'CPU ns/job',
    `${w.ratioLabel} (CPU)`,
  ];
  const rows = [];
  const wGroups = groups.filter((x) => x.workload === w);
  for (const g of wGroups) {
    const base = g.cells.find((c) => c.variant === w.baseline);
    const baseNs = base && med(base, 'nsPerJob');
    const baseCpu = base && med(base, 'cpuNsPerJob');
    // Row-independent variants (the floor) are measured with the first row and shown in each.
    const shared = g === wGroups[0] ? [] : wGroups[0].cells.filter((c) => w.rowIndependent?.includes(c.variant));
    for (const cell of [...g.cells, ...shared]) {
      if (!shared.includes(cell)) collectNotes(g, cell);
      const lead = [...(multiRow ? [g.row.concurrency] : []), LABELS[cell.variant] ?? cell.variant];
      const ns = med(cell, 'nsPerJob');
      if (ns === undefined) {
        rows.push([...lead, errText(cell), '', '', '', '', '']);
        continue;
      }
      const ratioOf = (x, baseX) =>
        cell.variant === w.baseline ? '1.00' : baseX !== undefined && x !== undefined ? fix(w.ratioRowOverBaseline ? x / baseX : baseX / x, 2) : '–';
      const cpu = med(cell, 'cpuNsPerJob');
      rows.push([
        ...lead,
        int(1e9 / ns),
        fix(ns),
        spread(cell, 'nsPerJob'),
        ratioOf(ns, baseNs),
        cpu === undefined ? '–' : fix(cpu),
        ratioOf(cpu, baseCpu),
      ]);
    }
  }
  const note =
    w.ratioNote ??
    (w.ratioRowOverBaseline
      ? `Ratio = ns/job of the row ÷ ns/job of ${LABELS[w.baseline] ?? w.baseline}: above 1 the row costs more per job.`
      : `Ratio = qmux ns/job ÷ peer ns/job (cost ratio): below 1 qmux is faster than that peer, above 1 slower.`);
  const cpuNote =
    'CPU ns/job is the process CPU time (user + system, every thread: V8 runs parts of its garbage collector on helper threads) over the measured pass, per job: on a machine busy with other work it moves far less than wall time, so it is the steadier basis for a ratio there.';
  return `${table(headers, rows)}\n\n${note} ${cpuNote}`;
}

function memoryTable(w) {
  const headers = ['library', 'heap B/job (queued)', 'retained after drain', 'add ns/job', 'spread (B/job)', 'qmux / peer (B/job)'];
  const rows = [];
  for (const g of groups.filter((x) => x.workload === w)) {
    const base = g.cells.find((c) => c.variant === w.baseline);
    const baseB = base && med(base, 'queuedBytesPerJob');
    for (const cell of g.cells) {
      collectNotes(g, cell);
      const label = LABELS[cell.variant] ?? cell.variant;
      const b = med(cell, 'queuedBytesPerJob');
      if (b === undefined) {
        rows.push([label, errText(cell), '', '', '', '']);
        continue;
      }
      const retained = med(cell, 'retainedBytes');
      const ratio = cell.variant === w.baseline ? '1.00' : baseB !== undefined ? fix(baseB / b, 2) : '–';
      rows.push([label, fix(b), bytes(retained), fix(med(cell, 'nsPerAdd')), spread(cell, 'queuedBytesPerJob'), ratio]);
    }
  }
  const n = w.jobs[mode].toLocaleString('en-US');
  return (
    `${table(headers, rows)}\n\n` +
    `${n} jobs added to a paused queue (qmux \`autoRun: false\`, fastq/async.queue \`pause()\`, p-queue \`autoStart: false\`). ` +
    `Heap = \`process.memoryUsage().heapUsed\` after \`gc()\`, minus the baseline taken after creating the queue. ` +
    `"Retained after drain" = heap after start + drain + gc, minus the same baseline (the idle queue object is still referenced). ` +
    `Ratio = qmux B/job ÷ peer B/job: below 1 qmux uses less heap per queued job.`
  );
}

function delayedTable(w) {
  const headers = [
    'library',
    'adds/s',
    'ns/add',
    'spread',
    'heap B/job (queued)',
    "'Timeout' timers armed",
    'purge ns/job',
    'timers after purge + stop',
    'due during the loop (ran)',
    'q.length after add / purge',
  ];
  const rows = [];
  for (const g of groups.filter((x) => x.workload === w)) {
    for (const cell of g.cells) {
      collectNotes(g, cell);
      const label = LABELS[cell.variant] ?? cell.variant;
      const ns = med(cell, 'nsPerAdd');
      if (ns === undefined) {
        rows.push([label, errText(cell), '', '', '', '', '', '', '', '']);
        continue;
      }
      const uniq = (key) => [...new Set(cell.samples.map((s) => s[key]))].join(' / ');
      rows.push([
        label,
        int(1e9 / ns),
        fix(ns),
        spread(cell, 'nsPerAdd'),
        fix(med(cell, 'heapBytesPerJob')),
        uniq('timersArmed'),
        fix(med(cell, 'nsPerPurgedJob')),
        uniq('timersAfterPurge'),
        int(med(cell, 'ranBeforePurge')),
        `${int(med(cell, 'lengthAfterAdd'))} / ${uniq('lengthAfterPurge')}`,
      ]);
      if (cell.samples.some((s) => s.timersArmed !== 1))
        notes.push(`delayed: expected exactly 1 armed Timeout after adding all delayed jobs, saw ${uniq('timersArmed')}`);
      if (cell.samples.some((s) => s.timersAfterPurge !== 0))
        notes.push(`delayed: ${uniq('timersAfterPurge')} Timeout(s) still armed after q.purge() + w.stop()`);
      if (cell.samples.some((s) => s.lengthAfterPurge !== 0)) notes.push(`delayed: q.length is ${uniq('lengthAfterPurge')} after q.purge()`);
    }
  }
  const n = w.jobs[mode].toLocaleString('en-US');
  return (
    `${table(headers, rows)}\n\n` +
    `${n} jobs added with \`q.add(i, { delay: Math.random() * 60_000 })\` (delays drawn before the timed loop) on a running worker, concurrency 16. ` +
    `The timed region is the add loop plus the microtask in which qmux runs its batched scheduling pass. ` +
    `Jobs whose delay ran out while the loop was still adding are due at that pass and run at once ("due during the loop"); ` +
    `timers = \`process.getActiveResourcesInfo()\` entries equal to \`'Timeout'\`, counted one event-loop turn after the adds; ` +
    `"purge ns/job" is the time of \`q.purge()\` divided by the jobs it dropped; ` +
    `"after purge + stop" is counted after \`q.purge(); await w.stop()\` and one more turn.`
  );
}

// ---------------------------------------------------------------------------------------------
// Report

function gitDescribe() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return `${head}${dirty ? ' (src/ has uncommitted changes)' : ''}`;
  } catch {
    return 'unknown';
  }
}
const version = (pkg) => {
  try {
    return JSON.parse(readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), 'utf8')).version;
  } catch {
    return '?';
  }
};
const cpus = os.cpus();
const argText = process.argv.slice(2).join(' ');
const command =
  process.env.npm_lifecycle_event === 'bench'
    ? `npm run bench${argText ? ` -- ${argText}` : ''}`
    : `node bench/run.mjs${argText ? ` ${argText}` : ''}`;

const machine = [
  `- CPU: ${cpus[0]?.model ?? 'unknown'} × ${cpus.length} (${os.arch()}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.platform()} ${os.release()}`,
  `- Node ${nodeVersions.node} (V8 ${nodeVersions.v8})${NODE === process.execPath ? '' : `: ${NODE}`}`,
  `- Peers: fastq ${version('fastq')}, p-queue ${version('p-queue')}, p-limit ${version('p-limit')}, async ${version('async')}`,
  `- qmux: git ${GIT_AT_START}`,
  `- Command: \`${command}\` (${mode}: ${runs} run(s) per cell, median reported; each cell a fresh \`node --expose-gc\` process with warm-up)`,
  `- Wall time: ${wallSeconds.toFixed(0)} s, ${new Date().toISOString()}`,
].join('\n');

const sections = [];
for (const w of selected) {
  const n = w.jobs[mode].toLocaleString('en-US');
  let body;
  if (w.kind === 'throughput') body = throughputTable(w);
  else if (w.kind === 'memory') body = memoryTable(w);
  else body = delayedTable(w);
  sections.push(`### ${w.id} (${n} jobs)\n\n${w.title}.\n\n${body}`);
}
const notesText = notes.length ? `### Notes\n\n${notes.map((n) => `- ${n}`).join('\n')}` : '';

const report = [`## qmux benchmark results (${mode})`, machine, ...sections, notesText].filter(Boolean).join('\n\n') + '\n';
process.stdout.write(`\n${report}`);

if (opts.write) {
  const header =
    `# Benchmark results\n\nGenerated by \`${command}\`; see bench/README.md for the method. ` +
    `Numbers are from one machine and one moment: compare ratios, not absolute figures.\n\n`;
  // Only the generated section (`## qmux benchmark results`, up to the next `## ` heading) is
  // replaced: what comes before it (the current-results table) and after it (the isolation run)
  // is written by hand and kept, so that a new run never drops either. A file without a
  // generated section gets the header and the tables, followed by whatever it held.
  const previous = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '';
  const generated = previous.indexOf('\n## qmux benchmark results');
  const head = generated >= 0 ? previous.slice(0, generated + 1) : header;
  // The next `## ` heading, or a marker comment such as isolation.mjs's `<!-- isolation:begin -->`.
  const next = /\n(## |<!-- )/g;
  next.lastIndex = generated >= 0 ? generated + 1 : 0;
  const handWritten = next.exec(previous)?.index ?? -1;
  writeFileSync(RESULTS, head + report + (handWritten >= 0 ? previous.slice(handWritten) : ''));
  process.stderr.write(`wrote ${RESULTS}\n`);
}
process.stderr.write(`done in ${wallSeconds.toFixed(1)} s\n`);
