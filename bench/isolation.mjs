#!/usr/bin/env node
// The isolation benchmark (issue 13): how long an urgent job waits behind a backlog of bulk work.
//
//   node bench/isolation.mjs [--runs 5] [--write]      # needs dist/ built (npm run build)
//
// One worker (or queue), concurrency 8. 100,000 bulk jobs are queued up front; then one alert job
// is added every 5 ms for 2 s (400 alerts). Every job, bulk or alert, does the same small piece of
// real async work: it waits on a 1 ms timer (`new Promise((r) => setTimeout(r, 1))`, an I/O-like
// wait), so 8 slots finish at most ~8 jobs per ms and the backlog outlasts the alerts (with
// `setImmediate` as the work, 100,000 jobs drained in under half a second and the alerts found
// an empty queue).
//
// Alert wait = from the alert's add to the moment its handler starts. Bulk throughput = bulk jobs
// finished per second during the 2 s of alerts. Variants:
//   - qmux Strategy.Priority: alerts in a queue with { priority: 1 }, bulk in one with { priority: 2 }
//   - qmux Strategy.Weighted 9:1: alerts { weight: 9 }, bulk { weight: 1 }
//   - p-queue: one queue, bulk added with { priority: 0 }, alerts with { priority: 1 }
//   - fastq: one FIFO queue (callback API); alerts go behind the backlog
// Each (run, variant) is a fresh `node` process; within a run the variants go in turn, and the
// median of the runs' figures is printed. --write also writes bench/isolation.svg (the chart in
// docs/benchmarks.md) and the table into bench/RESULTS.md between the isolation markers.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

const BULK = 100_000;
const CONCURRENCY = 8;
const ALERT_EVERY_MS = 5;
const ALERT_FOR_MS = 2000;
const VARIANTS = ['qmux-priority', 'qmux-weighted', 'p-queue', 'fastq'];
const LABELS = {
  'qmux-priority': 'qmux Strategy.Priority',
  'qmux-weighted': 'qmux Strategy.Weighted 9:1',
  'p-queue': 'p-queue, per-job priority',
  fastq: 'fastq (FIFO)',
};

const work = () => new Promise((resolve) => setTimeout(resolve, 1));

async function cell(variant) {
  const waits = [];
  let bulkDone = 0;
  let windowStart = 0;
  let bulkAtEnd = -1;
  const alertRan = (addedAt) => waits.push(performance.now() - addedAt);
  let addAlert;
  let addBulk;
  let idle;
  if (variant.startsWith('qmux')) {
    const { Worker, Strategy } = await import(new URL('../dist/index.js', import.meta.url));
    const weighted = variant === 'qmux-weighted';
    const worker = new Worker(
      (job) => {
        if (job.data !== undefined) alertRan(job.data);
        return work().then(() => {
          if (job.data === undefined) bulkDone++;
        });
      },
      { concurrency: CONCURRENCY, strategy: weighted ? Strategy.Weighted : Strategy.Priority },
    );
    const alerts = worker.bindQueue(weighted ? { name: 'alerts', weight: 9 } : { name: 'alerts', priority: 1 });
    const bulk = worker.bindQueue(weighted ? { name: 'bulk', weight: 1 } : { name: 'bulk', priority: 2 });
    addBulk = () => bulk.add(undefined);
    addAlert = () => alerts.add(performance.now());
    idle = () => worker.waitUntilIdle();
  } else if (variant === 'p-queue') {
    const { default: PQueue } = await import('p-queue');
    const q = new PQueue({ concurrency: CONCURRENCY });
    const bulkJob = () => work().then(() => bulkDone++);
    addBulk = () => q.add(bulkJob, { priority: 0 });
    addAlert = () => {
      const at = performance.now();
      q.add(
        () => {
          alertRan(at);
          return work();
        },
        { priority: 1 },
      );
    };
    idle = () => q.onIdle();
  } else if (variant === 'fastq') {
    const { default: fastq } = await import('fastq');
    const q = fastq((at, cb) => {
      if (at !== 0) alertRan(at);
      void work().then(() => {
        if (at === 0) bulkDone++;
        cb(null);
      });
    }, CONCURRENCY);
    const done = () => {};
    addBulk = () => q.push(0, done);
    addAlert = () => q.push(performance.now(), done);
    idle = () => (q.idle() ? Promise.resolve() : new Promise((resolve) => (q.drain = resolve)));
  } else throw new Error(`unknown variant ${variant}`);

  for (let i = 0; i < BULK; i++) addBulk();
  windowStart = performance.now();
  const startBulk = bulkDone;
  await new Promise((resolve) => {
    let sent = 0;
    const timer = setInterval(() => {
      addAlert();
      if (++sent === ALERT_FOR_MS / ALERT_EVERY_MS) {
        clearInterval(timer);
        bulkAtEnd = bulkDone;
        resolve();
      }
    }, ALERT_EVERY_MS);
  });
  const windowMs = performance.now() - windowStart;
  await idle();
  if (bulkDone !== BULK) throw new Error(`${variant}: ${bulkDone} of ${BULK} bulk jobs ran`);
  if (waits.length !== ALERT_FOR_MS / ALERT_EVERY_MS) throw new Error(`${variant}: ${waits.length} alerts ran`);
  waits.sort((a, b) => a - b);
  const q = (p) => waits[Math.min(waits.length - 1, Math.floor(p * waits.length))];
  return {
    ok: true,
    variant,
    windowMs,
    p50: q(0.5),
    p99: q(0.99),
    max: waits[waits.length - 1],
    bulkPerSec: ((bulkAtEnd - startBulk) / windowMs) * 1000,
  };
}

if (process.argv[2] === '--cell') {
  console.log(JSON.stringify(await cell(process.argv[3])));
  process.exit(0);
}

const args = process.argv.slice(2);
const runs = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 5;
const write = args.includes('--write');
const samples = Object.fromEntries(VARIANTS.map((v) => [v, []]));
const started = Date.now();
for (let r = 0; r < runs; r++) {
  for (let k = 0; k < VARIANTS.length; k++) {
    const variant = VARIANTS[(k + r) % VARIANTS.length]; // the first variant rotates from run to run
    const res = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--cell', variant], { encoding: 'utf8', timeout: 300_000 });
    const line = (res.stdout ?? '').trim().split('\n').pop() ?? '';
    if (!line.startsWith('{')) throw new Error(`${variant} failed: ${res.stderr}`);
    const out = JSON.parse(line);
    samples[variant].push(out);
    process.stderr.write(
      `run ${r + 1}/${runs} ${variant}: p50 ${out.p50.toFixed(2)} p99 ${out.p99.toFixed(2)} max ${out.max.toFixed(2)} ms, bulk ${Math.round(out.bulkPerSec)}/s\n`,
    );
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const rows = VARIANTS.map((v) => ({
  variant: v,
  label: LABELS[v],
  p50: median(samples[v].map((s) => s.p50)),
  p99: median(samples[v].map((s) => s.p99)),
  max: median(samples[v].map((s) => s.max)),
  bulkPerSec: median(samples[v].map((s) => s.bulkPerSec)),
}));
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const pkg = (name) => JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
const table = [
  `One worker (or queue), concurrency ${CONCURRENCY}; ${BULK.toLocaleString('en-US')} bulk jobs queued, then one alert every ${ALERT_EVERY_MS} ms for ${ALERT_FOR_MS / 1000} s. Every job waits on a 1 ms timer (\`new Promise((r) => setTimeout(r, 1))\`). Alert wait: add to handler start, ms. Median of ${runs} runs, each variant a fresh process.`,
  '',
  '| variant | alert wait p50 | p99 | max | bulk jobs/s during the alerts |',
  '| --- | ---: | ---: | ---: | ---: |',
  ...rows.map((r) => `| ${r.label} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.max)} | ${Math.round(r.bulkPerSec).toLocaleString('en-US')} |`),
  '',
  `Command: \`node bench/isolation.mjs --runs ${runs} --write\` (after \`npm run build\`), ${new Date(started).toISOString()}, Node ${process.version}, ${os.cpus()[0]?.model ?? '?'} × ${os.cpus().length}; p-queue ${pkg('p-queue')}, fastq ${pkg('fastq')}.`,
].join('\n');
console.log(table);

/** A horizontal bar chart of p50 / p99 / max on a log scale, hand-written SVG. */
function svg(rows) {
  const W = 760;
  const left = 200;
  const right = 30;
  const rowH = 66;
  const top = 50;
  const H = top + rows.length * rowH + 50;
  const lo = 0.01;
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...rows.map((r) => r.max))));
  const x = (v) => left + ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (W - left - right);
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const colors = { p50: '#4c9be8', p99: '#f0a030', max: '#d9534f' };
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>Alert wait behind a backlog of bulk jobs: qmux, p-queue, fastq</title>`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">Alert wait behind ${BULK.toLocaleString('en-US')} queued bulk jobs (ms, log scale; lower is better)</text>`,
  ];
  for (let d = lo; d <= hi; d *= 10) {
    const gx = x(d).toFixed(1);
    out.push(`<line x1="${gx}" y1="${top - 8}" x2="${gx}" y2="${H - 40}" stroke="#ddd"/>`);
    out.push(`<text x="${gx}" y="${H - 26}" text-anchor="middle" fill="#555">${d >= 1 ? d.toLocaleString('en-US') : d}</text>`);
  }
  rows.forEach((r, i) => {
    const y0 = top + i * rowH;
    out.push(`<text x="${left - 8}" y="${y0 + 26}" text-anchor="end">${esc(r.label)}</text>`);
    out.push(
      `<text x="${left - 8}" y="${y0 + 41}" text-anchor="end" fill="#777" font-size="11">bulk ${Math.round(r.bulkPerSec).toLocaleString('en-US')}/s</text>`,
    );
    ['p50', 'p99', 'max'].forEach((k, j) => {
      const y = y0 + 6 + j * 16;
      const w = Math.max(1, x(r[k]) - left);
      out.push(`<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="13" fill="${colors[k]}"/>`);
      out.push(`<text x="${(left + w + 4).toFixed(1)}" y="${y + 11}" fill="#333" font-size="11">${k} ${ms(r[k])}</text>`);
    });
  });
  out.push(
    `<text x="${left}" y="${H - 8}" fill="#555" font-size="11">concurrency ${CONCURRENCY}, one alert every ${ALERT_EVERY_MS} ms for ${ALERT_FOR_MS / 1000} s; every job waits on a 1 ms timer; median of ${runs} runs</text>`,
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

if (write) {
  writeFileSync(new URL('./isolation.svg', import.meta.url), svg(rows));
  const file = new URL('./RESULTS.md', import.meta.url);
  const text = readFileSync(file, 'utf8');
  const begin = '<!-- isolation:begin -->';
  const end = '<!-- isolation:end -->';
  const block = `${begin}\n## Isolation: alert wait behind a backlog\n\n${table}\n\n![alert wait chart](isolation.svg)\n${end}`;
  const next = text.includes(begin) ? text.replace(new RegExp(`${begin}[\\s\\S]*?${end}`), block) : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, next);
  process.stderr.write('wrote bench/isolation.svg and the isolation section of bench/RESULTS.md\n');
}
