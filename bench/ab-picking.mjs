#!/usr/bin/env node
// A/B benchmark of two qmux checkouts on the picking cells (issue 13): the `sources` and `strategies`
// workloads (AB_WORKLOAD=sources or strategies for one of them, AB_VARIANTS=a,b for some cells). Derived from the A/B harness the
// project used for the noop cells; it also prints, per side, each cell over its workload's one-queue cell.
//
//   node bench/ab-picking.mjs <dirA> <dirB> [runs=11]
//
// Each side is measured with its OWN bench/cell.mjs, which imports qmux from
// `new URL('../dist/index.js', import.meta.url)`, i.e. <dir>/dist/index.js, and resolves its peers
// from <dir>/node_modules. So build each side first (`npm run build` in each dir); this script does
// not build anything.
//
// Every sample is a fresh `node --expose-gc <dir>/bench/cell.mjs '<json>'` process (spawnSync,
// cwd = <dir>), run one at a time. For each run r and each cell, A runs and then B runs, so the
// sequence is A,B,A,B,... and drift on the machine hits both sides alike. Per cell and side the
// median ns/job over `runs` samples is reported with its min-max range; "pair ratio" is the median
// of the per-run ratios B_r/A_r (neighbours in time, so it is less sensitive to slow drift).
//
// Progress goes to stderr; the report (setup, commands, table) to stdout.

import { spawnSync, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, readdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import os from 'node:os';

const USAGE = 'usage: node bench/ab-picking.mjs <dirA> <dirB> [runs=11]\n';
const [argA, argB, argRuns] = process.argv.slice(2);
if (!argA || !argB) {
  process.stderr.write(USAGE);
  process.exit(2);
}
const runs = argRuns === undefined ? 11 : Number(argRuns);
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write(`runs must be a positive integer, got ${argRuns}\n${USAGE}`);
  process.exit(2);
}

// The cells: the qmux rows of the bench suite's noop and result workloads, at the suite's full
// job count (bench/workloads.mjs: jobs.full = 200_000 for both).
const JOBS = 200_000;
const BASES = { sources: 'one-source', strategies: 'one-queue' };
const CELLS = [
  ...['one-source', 'idle999-Priority', 'idle999-RoundRobin', 'idle999-Weighted', 'busy1000-Weighted'].map((variant) => ({
    workload: 'sources',
    variant,
    jobs: JOBS,
    concurrency: 16,
  })),
  ...['one-queue', 'Priority', 'RoundRobin', 'MaxLen', 'MinLen', 'Weighted'].map((variant) => ({
    workload: 'strategies',
    variant,
    jobs: JOBS,
    concurrency: 16,
  })),
]
  .filter((c) => process.env.AB_WORKLOAD === undefined || c.workload === process.env.AB_WORKLOAD)
  .filter((c) => process.env.AB_VARIANTS === undefined || process.env.AB_VARIANTS.split(',').includes(c.variant));
const CELL_TIMEOUT_MS = 180_000; // same as the suite's full-run timeout

// Quiet-machine gate (this is a shared 2-core box): before each sample, the system-wide CPU use is
// read from /proc/stat over QUIET_PROBE_MS; while other processes keep more than QUIET_MAX_CORES
// busy, wait and probe again (up to QUIET_MAX_WAIT_MS, then run anyway and count it). The busy
// cores during each sample are recorded too: a cell alone measured 1.3-1.4 busy cores (one JS
// thread plus V8's GC/compiler helpers) on this machine, so
// more than BUSY_FLAG_CORES means something else probably ran at the same time.
// AB_QUIET=0 disables the gate (the busy-during-sample figure is still reported).
const QUIET = process.env.AB_QUIET !== '0' && existsSync('/proc/stat');
const QUIET_PROBE_MS = 500;
const QUIET_MAX_CORES = 0.3;
const QUIET_MAX_WAIT_MS = 120_000;
const BUSY_FLAG_CORES = 1.7;
const sleepMs = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
function cpuTimes() {
  if (!existsSync('/proc/stat')) return undefined;
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0); // user..steal (guest is counted in user)
  return { total, idle: f[3] + f[4] };
}
const busyCores = (t0, t1) =>
  t0 && t1 && t1.total > t0.total ? ((t1.total - t0.total - (t1.idle - t0.idle)) / (t1.total - t0.total)) * os.cpus().length : NaN;
let quietWaitMs = 0;
let quietTimeouts = 0;
function waitQuiet() {
  if (!QUIET) return;
  const start = Date.now();
  for (;;) {
    const a = cpuTimes();
    sleepMs(QUIET_PROBE_MS);
    const busy = busyCores(a, cpuTimes());
    if (!(busy > QUIET_MAX_CORES)) break;
    if (Date.now() - start > QUIET_MAX_WAIT_MS) {
      quietTimeouts++;
      process.stderr.write(`  machine still busy (${busy.toFixed(2)} cores) after ${QUIET_MAX_WAIT_MS / 1000} s; running anyway\n`);
      break;
    }
  }
  quietWaitMs += Date.now() - start - QUIET_PROBE_MS;
}

// ---------------------------------------------------------------------------------------------
// Sides

const warnings = [];
const sha = (file) => createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 12);
const git = (dir, args) => {
  try {
    return execFileSync('git', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
};
function newestMtime(dir) {
  let best = 0;
  for (const ent of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) best = Math.max(best, newestMtime(p));
    else if (ent.name.endsWith('.ts')) best = Math.max(best, statSync(p).mtimeMs);
  }
  return best;
}

function side(name, arg) {
  const dir = path.resolve(arg);
  const cell = path.join(dir, 'bench', 'cell.mjs');
  const dist = path.join(dir, 'dist', 'index.js');
  for (const f of [cell, dist]) {
    if (!existsSync(f)) {
      process.stderr.write(`${name}: ${f} is missing${f === dist ? ' (run `npm run build` there)' : ''}\n`);
      process.exit(2);
    }
  }
  // cell.mjs must load qmux relative to itself, or both sides would measure the same build.
  const cellSrc = readFileSync(cell, 'utf8');
  if (!cellSrc.includes("new URL('../dist/index.js', import.meta.url)")) {
    warnings.push(`${name}: ${cell} does not import qmux via new URL('../dist/index.js', import.meta.url); check which build it loads`);
  }
  const head = git(dir, ['rev-parse', '--short', 'HEAD']) ?? 'not a git checkout';
  const dirtySrc = git(dir, ['status', '--porcelain', '--', 'src']);
  const srcDir = path.join(dir, 'src');
  const srcNewest = existsSync(srcDir) ? newestMtime(srcDir) : 0;
  const distMtime = statSync(dist).mtimeMs;
  if (srcNewest > distMtime) {
    warnings.push(`${name}: a file under ${srcDir} is newer than dist/index.js; dist/ may be stale (run \`npm run build\` in ${dir})`);
  }
  return {
    name,
    dir,
    cell,
    head,
    dirtySrc: Boolean(dirtySrc),
    cellSha: sha(cell),
    distSha: sha(dist),
    distBuilt: new Date(distMtime).toISOString(),
    samples: CELLS.map(() => []),
    busy: CELLS.map(() => []),
    errors: CELLS.map(() => []),
    notes: [],
  };
}

const A = side('A', argA);
const B = side('B', argB);
if (A.cellSha !== B.cellSha) {
  warnings.push(
    `bench/cell.mjs differs between A (${A.cellSha}) and B (${B.cellSha}): the harness itself changed, so part of a difference may come from it (diff them)`,
  );
}

// ---------------------------------------------------------------------------------------------
// Running

const shq = (s) => (/^[\w./=:@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
const label = (c) => `${c.workload}/${c.variant} c=${c.concurrency}`;
const argsFor = (s, spec) => ['--expose-gc', s.cell, JSON.stringify(spec)];
const commandFor = (s, spec) => `cd ${shq(s.dir)} && ${shq(process.execPath)} --expose-gc bench/cell.mjs ${shq(JSON.stringify(spec))}`;

function runOnce(s, spec) {
  const r = spawnSync(process.execPath, argsFor(s, spec), {
    cwd: s.dir,
    encoding: 'utf8',
    timeout: CELL_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.error) return { ok: false, error: `${r.error.code ?? r.error.message}` };
  const line = (r.stdout ?? '')
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (line) {
    try {
      return JSON.parse(line);
    } catch {
      /* fall through */
    }
  }
  const lastErr = (r.stderr ?? '').trim().split('\n').filter(Boolean).slice(-1)[0] ?? '';
  return { ok: false, error: `no result (exit ${r.status ?? r.signal})${lastErr ? `: ${lastErr}` : ''}` };
}

const loadStart = os.loadavg();
const uptimeStart = spawnSync('uptime', { encoding: 'utf8' }).stdout?.trim();
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '?');
const t0 = Date.now();
const total = runs * CELLS.length * 2;
let done = 0;
process.stderr.write(
  `A/B: ${runs} run(s) x ${CELLS.length} cells x 2 sides = ${total} processes; load ${loadStart.map((x) => x.toFixed(2)).join(' ')}\n`,
);
// A pair (A then B, same cell, same run) in which either sample ran with more than BUSY_FLAG_CORES
// busy is discarded and run again, up to PAIR_RETRIES times; the last attempt is kept whatever it
// shows. Both samples go together, so the retry does not favour a side. AB_RETRY=0 disables it.
const PAIR_RETRIES = process.env.AB_RETRY === undefined ? 3 : Number(process.env.AB_RETRY);
let pairRetries = 0;
function sample(s, spec, r) {
  waitQuiet();
  const t = Date.now();
  const c0 = cpuTimes();
  const res = runOnce(s, spec);
  const busy = busyCores(c0, cpuTimes());
  const ms = Date.now() - t;
  process.stderr.write(
    `[${String(done + 1).padStart(String(total).length)}/${total}] run ${r + 1}/${runs} ${label(spec)} ${s.name}: ` +
      `${res.ok ? `${res.nsPerJob.toFixed(1)} ns/job` : `ERROR ${res.error}`} [${ms} ms, ${f2(busy)} cores busy]\n`,
  );
  return { res, busy };
}
function record(s, i, spec, r, { res, busy }) {
  done++;
  s.busy[i].push(busy);
  if (res.ok) {
    s.samples[i].push(res.nsPerJob);
    if (res.leftoverTimers > 0) s.notes.push(`${label(spec)} run ${r + 1}: ${res.leftoverTimers} Timeout(s) armed after idle`);
    if (res.unhandledRejections)
      s.notes.push(`${label(spec)} run ${r + 1}: ${res.unhandledRejections.count} unhandled rejection(s): ${res.unhandledRejections.first}`);
  } else {
    s.errors[i].push(res.error);
    s.samples[i].push(NaN); // keep run indices aligned for the pair ratio
  }
}
for (let r = 0; r < runs; r++) {
  for (const [i, spec] of CELLS.entries()) {
    let a;
    let b;
    for (let attempt = 0; ; attempt++) {
      a = sample(A, spec, r);
      b = sample(B, spec, r);
      if (!(a.busy > BUSY_FLAG_CORES || b.busy > BUSY_FLAG_CORES) || attempt >= PAIR_RETRIES) break;
      pairRetries++;
      process.stderr.write(`  pair discarded (busy ${f2(a.busy)} / ${f2(b.busy)} cores > ${BUSY_FLAG_CORES}); running it again\n`);
    }
    record(A, i, spec, r, a);
    record(B, i, spec, r, b);
  }
}
const wall = (Date.now() - t0) / 1000;
const loadEnd = os.loadavg();
const uptimeEnd = spawnSync('uptime', { encoding: 'utf8' }).stdout?.trim();

// ---------------------------------------------------------------------------------------------
// Report

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const finite = (xs) => xs.filter((x) => Number.isFinite(x));
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const range = (xs) => {
  const v = finite(xs);
  if (!v.length) return '–';
  const lo = Math.min(...v);
  const hi = Math.max(...v);
  const m = median(v);
  return `${f1(lo)}–${f1(hi)} (±${(((hi - lo) / 2 / m) * 100).toFixed(0)}%)`;
};

const out = [];
out.push(`## A/B: qmux, ${runs} run(s) per cell per side, ${JOBS.toLocaleString('en-US')} jobs per cell`);
out.push('');
for (const s of [A, B]) {
  out.push(
    `- ${s.name}: \`${s.dir}\` git ${s.head}${s.dirtySrc ? ' (src/ has uncommitted changes)' : ''}; dist/index.js sha256 ${s.distSha} built ${s.distBuilt}; bench/cell.mjs sha256 ${s.cellSha}`,
  );
}
out.push(`- Node ${process.version}, ${os.cpus()[0]?.model ?? '?'} × ${os.cpus().length}`);
out.push(`- Load average (1/5/15 min): before ${loadStart.map((x) => x.toFixed(2)).join(' ')}, after ${loadEnd.map((x) => x.toFixed(2)).join(' ')}`);
if (uptimeStart) out.push(`- uptime before: \`${uptimeStart}\``);
if (uptimeEnd) out.push(`- uptime after: \`${uptimeEnd}\``);
out.push(`- Wall time ${wall.toFixed(0)} s; order: for each run, for each cell, A then B (A,B,A,B,...), one process at a time`);
out.push(
  QUIET
    ? `- Quiet gate: before each sample, waited until the other load was ≤ ${QUIET_MAX_CORES} busy cores over ${QUIET_PROBE_MS} ms (/proc/stat); waited ${(quietWaitMs / 1000).toFixed(0)} s in all${quietTimeouts ? `, gave up waiting ${quietTimeouts} time(s)` : ''}`
    : '- Quiet gate: off (AB_QUIET=0 or no /proc/stat)',
);
out.push(
  `- Pair retry: an A,B pair with either sample above ${BUSY_FLAG_CORES} busy cores was discarded and re-run (at most ${PAIR_RETRIES} times): ${pairRetries} pair(s) discarded; flagged samples left in the table were kept after the last retry`,
);
out.push('');
out.push('### Commands (one fresh process per sample)');
out.push('');
out.push('```sh');
out.push(`node bench/ab-picking.mjs ${shq(argA)} ${shq(argB)} ${runs}`);
for (const spec of CELLS) for (const s of [A, B]) out.push(`${commandFor(s, spec)}   # ${s.name}`);
out.push('```');
out.push('');
out.push('### Results (ns/job, lower is better)');
out.push('');
out.push(
  `| cell | median A | median B | ratio B/A | pair ratio (median B_r/A_r) | spread A min–max | spread B min–max | ranges overlap | busy cores during samples, max A / B (flagged > ${BUSY_FLAG_CORES}) |`,
);
out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |');
for (const [i, spec] of CELLS.entries()) {
  const a = A.samples[i];
  const b = B.samples[i];
  const ma = median(a);
  const mb = median(b);
  const pairs = a.map((x, r) => b[r] / x).filter((x) => Number.isFinite(x));
  const va = finite(a);
  const vb = finite(b);
  const overlap =
    va.length > 1 && vb.length > 1 ? (Math.max(...va) >= Math.min(...vb) && Math.max(...vb) >= Math.min(...va) ? 'yes' : '**no**') : '–';
  const errs = A.errors[i].length + B.errors[i].length;
  const busyText = [A, B]
    .map((x) => {
      const v = finite(x.busy[i]);
      if (!v.length) return '?';
      const n = v.filter((y) => y > BUSY_FLAG_CORES).length;
      return `${Math.max(...v).toFixed(2)}${n ? ` (${n} flagged)` : ''}`;
    })
    .join(' / ');
  out.push(
    `| ${label(spec)}${errs ? ` (${A.errors[i].length}+${B.errors[i].length} errors)` : ''} | ${f1(ma)} | ${f1(mb)} | ${Number.isFinite(ma) && Number.isFinite(mb) ? (mb / ma).toFixed(3) : '–'} | ${pairs.length ? median(pairs).toFixed(3) : '–'} | ${range(a)} | ${range(b)} | ${overlap} | ${busyText} |`,
  );
}
out.push('');
out.push("### Within each side: variant ÷ its workload's one-queue cell, median of per-run ratios (same run, neighbours in time)");
out.push('');
out.push('| cell | A | B |');
out.push('| --- | ---: | ---: |');
for (const [i, spec] of CELLS.entries()) {
  const base = CELLS.findIndex((c) => c.workload === spec.workload && c.variant === BASES[spec.workload]);
  const within = (s) => median(s.samples[i].map((x, r) => x / s.samples[base][r]).filter((x) => Number.isFinite(x)));
  out.push(`| ${label(spec)} | ${within(A).toFixed(2)} | ${within(B).toFixed(2)} |`);
}
out.push('');
out.push(
  'ratio B/A = median B ÷ median A: below 1, B is cheaper per job. ±% = half the min–max range ÷ median (as in bench/RESULTS.md). Compare a ratio with the A/A noise of the same cell before believing it.',
);
const errLines = [];
for (const s of [A, B])
  for (const [i, spec] of CELLS.entries()) for (const e of new Set(s.errors[i])) errLines.push(`- ${s.name} ${label(spec)}: ${e}`);
const noteLines = [...warnings.map((w) => `- warning: ${w}`), ...errLines, ...A.notes.map((n) => `- A ${n}`), ...B.notes.map((n) => `- B ${n}`)];
if (noteLines.length) {
  out.push('');
  out.push('### Notes');
  out.push('');
  out.push(...noteLines);
}
process.stdout.write(out.join('\n') + '\n');
process.exit(errLines.length ? 1 : 0);
