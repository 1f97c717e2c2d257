// The keys workloads (SPEC 10) timed by CPU time instead of wall time, for a machine shared with
// other work: `process.cpuUsage()` of the process around the timed region counts only this
// process's own time (cache and memory-bandwidth contention still show). Each variant runs in a
// fresh process, the variants alternate, and the median of the runs is printed.
//
//   npm run build && node bench/keys-cpu.mjs [runs]
//
// Cells: 200,000 fire-and-forget no-op jobs, job i of key i % K, concurrency 16 (capped: keys.concurrency 1
// and concurrency 1e9); two warm-up passes of 20,000 jobs first.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const VARIANTS = [
  ['plain queue (no keys)', 'plain', 1, 16],
  ['keys, 10 keys', 'keys', 10, 16],
  ['keys, 100,000 keys', 'keys', 100_000, 16],
  ['keys with weights 1..4, 10 keys', 'weighted', 10, 16],
  ['keys with weights 1..4, 100,000 keys', 'weighted', 100_000, 16],
  ['keys.concurrency 1, 10 keys (c=1e9)', 'capped', 10, 1e9],
  ['keys.concurrency 1, 100,000 keys (c=1e9)', 'capped', 100_000, 1e9],
];

if (process.argv[2] === '--cell') {
  const [kind, keys, concurrency] = process.argv.slice(3).map((x, i) => (i === 0 ? x : Number(x)));
  const { Worker } = await import(new URL('../dist/index.js', import.meta.url).href);
  const job = () => Promise.resolve();
  const once = async (n) => {
    const w = new Worker(job, { concurrency });
    const options = { by: (i) => i % keys };
    if (kind === 'weighted') options.weight = (key) => 1 + (key.charCodeAt(key.length - 1) % 4);
    if (kind === 'capped') options.concurrency = 1;
    const q = kind === 'plain' ? w.bindQueue() : w.bindQueue({ keys: options });
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) q.add(i);
    await w.waitUntilIdle();
    const spent = process.cpuUsage(t0);
    if (q.keyCount !== 0) throw new Error(`${q.keyCount} keys remembered after the drain`);
    return ((spent.user + spent.system) * 1000) / n;
  };
  await once(20_000);
  await once(20_000);
  globalThis.gc();
  process.stdout.write(`${await once(200_000)}\n`);
} else {
  const runs = Number(process.argv[2] ?? 7);
  const samples = VARIANTS.map(() => []);
  const self = fileURLToPath(import.meta.url);
  for (let r = 0; r < runs; r++) {
    VARIANTS.forEach(([, kind, keys, c], i) => {
      const out = execFileSync(process.execPath, ['--expose-gc', self, '--cell', kind, String(keys), String(c)], { encoding: 'utf8' });
      samples[i].push(Number(out.trim()));
    });
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const plain = median(samples[0]);
  console.log(`| cell | CPU ns/job (median of ${runs}) | / plain |`);
  console.log('| --- | ---: | ---: |');
  VARIANTS.forEach(([label], i) => {
    console.log(`| ${label} | ${median(samples[i]).toFixed(0)} | ${(median(samples[i]) / plain).toFixed(2)} |`);
  });
}
