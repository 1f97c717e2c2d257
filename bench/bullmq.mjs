// BullMQ cell (SPEC 9, issue 10): drains the same kind of BullMQ queue (5,000 no-op jobs,
// concurrency 16) with BullMQ's own Worker and with a qmux worker through BullMQSource,
// alternated, a fresh process each, on one local redis-server started here (free port, no
// persistence). Goal: qmux >= 0.9x BullMQ's jobs/s.
//
//   npm run build && node bench/bullmq.mjs [--runs 7] [--jobs 5000] [--concurrency 16]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const runs = option('runs', 7);
const jobs = option('jobs', 5000);
const concurrency = option('concurrency', 16);

if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
  console.error('bench/bullmq.mjs needs redis-server: apt-get install redis-server');
  process.exit(1);
}

const port = await new Promise((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'qmux-bench-redis-'));
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise((resolve) => {
  let out = '';
  redis.stdout.setEncoding('utf8').on('data', (chunk) => {
    out += chunk;
    if (out.includes('Ready to accept connections')) resolve();
  });
});

const cell = fileURLToPath(new URL('./bullmq-cell.mjs', import.meta.url));
function runCell(variant) {
  const result = spawnSync(process.execPath, [cell, JSON.stringify({ variant, port, jobs, concurrency })], { encoding: 'utf8' });
  const line = result.stdout.trim().split('\n').at(-1) ?? '';
  const parsed = JSON.parse(line || '{"ok":false,"error":"no output"}');
  if (!parsed.ok) throw new Error(`${variant} cell failed: ${parsed.error}\n${result.stderr}`);
  return parsed;
}

const samples = { bullmq: [], qmux: [] };
const nodeCpu = { bullmq: [], qmux: [] };
const redisCpu = { bullmq: [], qmux: [] };
try {
  for (let run = 0; run < runs; run++) {
    const order = run % 2 === 0 ? ['bullmq', 'qmux'] : ['qmux', 'bullmq'];
    for (const variant of order) {
      const cellResult = runCell(variant);
      samples[variant].push(cellResult.jobsPerSec);
      nodeCpu[variant].push(cellResult.nodeCpuUsPerJob);
      redisCpu[variant].push(cellResult.redisCpuUsPerJob);
      console.error(
        `run ${run + 1}/${runs} ${variant}: ${Math.round(cellResult.jobsPerSec)} jobs/s, ` +
          `${cellResult.nodeCpuUsPerJob.toFixed(0)} µs node CPU/job, ${cellResult.redisCpuUsPerJob.toFixed(0)} µs redis CPU/job`,
      );
    }
  }
} finally {
  redis.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const bull = median(samples.bullmq);
const qmux = median(samples.qmux);
console.log(`| jobs | concurrency | BullMQ Worker jobs/s | qmux + BullMQSource jobs/s | qmux / BullMQ |`);
console.log(`| ---: | ---: | ---: | ---: | ---: |`);
console.log(`| ${jobs} | ${concurrency} | ${Math.round(bull)} | ${Math.round(qmux)} | ${(qmux / bull).toFixed(2)} |`);
console.log('');
console.log('| CPU per job (µs) | BullMQ Worker | qmux + BullMQSource |');
console.log('| --- | ---: | ---: |');
console.log(`| node process | ${median(nodeCpu.bullmq).toFixed(0)} | ${median(nodeCpu.qmux).toFixed(0)} |`);
console.log(`| redis-server | ${median(redisCpu.bullmq).toFixed(0)} | ${median(redisCpu.qmux).toFixed(0)} |`);
console.log(`(median of ${runs} runs each, alternated, fresh process per cell)`);
