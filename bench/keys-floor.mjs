// What 100,000 keys cost at the least, next to what they cost qmux: the keys workload of
// `keys-cpu.mjs` (200,000 fire-and-forget jobs, job i of key i % K, all added before the drain)
// run by the smallest keyed dispatcher that still does what any keyed queue must per key: find
// the key's state by its key in a Map, make it (and the key's name, `String(key)`, which a job
// carries) when the key is new, keep its jobs in order and the keys that can run in a ring, and
// forget the key once it drains. No promises, no handles, no stats: it is a floor, not a peer.
//
// The 100,000-key cost minus the 10-key cost is what the keys themselves cost per job. The
// floor's difference, added to qmux's 10-key cost, is the best ratio qmux could reach on this
// machine without making its per-job path cheaper.
//
//   npm run build && node bench/keys-floor.mjs [runs]
//
// Each cell runs in a fresh process, the cells alternate, CPU time (`process.cpuUsage()`), medians.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The floor dispatcher's cost per job, in CPU ns, over `keys` keys. */
function floor(keys, n) {
  const active = new Map();
  let ring; // the next key to give a job; keys that can run are linked in a circle
  const ready = (key) => {
    key.ready = true;
    if (ring === undefined) {
      ring = key;
      key.next = key;
      key.prev = key;
    } else {
      key.prev = ring.prev;
      key.next = ring;
      ring.prev.next = key;
      ring.prev = key;
    }
  };
  const unready = (key) => {
    key.ready = false;
    if (key.next === key) ring = undefined;
    else {
      key.prev.next = key.next;
      key.next.prev = key.prev;
      if (ring === key) ring = key.next;
    }
  };
  const handler = (data) => data;
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const id = i % keys;
    let key = active.get(id);
    if (key === undefined) {
      key = new Key(id, String(id));
      active.set(id, key);
    }
    const job = new Job(i, key);
    if (key.tail === undefined) key.head = job;
    else key.tail.next = job;
    key.tail = job;
    if (!key.ready) ready(key);
  }
  while (ring !== undefined) {
    const key = ring;
    ring = key.next;
    const job = key.head;
    key.head = job.next;
    if (key.head === undefined) {
      key.tail = undefined;
      unready(key);
    }
    job.state = 1;
    handler(job.data);
    job.state = 2;
    if (key.head === undefined) active.delete(key.id);
  }
  const spent = process.cpuUsage(t0);
  return ((spent.user + spent.system) * 1000) / n;
}

class Key {
  constructor(id, name) {
    this.id = id;
    this.name = name;
    this.head = undefined;
    this.tail = undefined;
    this.next = undefined;
    this.prev = undefined;
    this.ready = false;
  }
}

class Job {
  constructor(data, key) {
    this.data = data;
    this.key = key;
    this.next = undefined;
    this.state = 0;
  }
}

const self = fileURLToPath(import.meta.url);
const qmuxCell = fileURLToPath(new URL('./keys-cpu.mjs', import.meta.url));

if (process.argv[2] === '--cell') {
  const keys = Number(process.argv[3]);
  floor(keys, 20_000);
  floor(keys, 20_000);
  globalThis.gc();
  process.stdout.write(`${floor(keys, 200_000)}\n`);
} else {
  const runs = Number(process.argv[2] ?? 7);
  const cells = [
    ['floor', 10, () => [self, '--cell', '10']],
    ['floor', 100_000, () => [self, '--cell', '100000']],
    ['qmux', 10, () => [qmuxCell, '--cell', 'keys', '10', '16']],
    ['qmux', 100_000, () => [qmuxCell, '--cell', 'keys', '100000', '16']],
  ];
  const samples = cells.map(() => []);
  for (let r = 0; r < runs; r++) {
    cells.forEach(([, , args], i) => {
      const out = execFileSync(process.execPath, ['--expose-gc', ...args()], { encoding: 'utf8' });
      samples[i].push(Number(out.trim()));
    });
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const [f10, f100k, q10, q100k] = samples.map(median);
  console.log(`| dispatcher | 10 keys | 100,000 keys | difference | 100,000 ÷ 10 | (CPU ns/job, median of ${runs})`);
  console.log('| --- | ---: | ---: | ---: | ---: |');
  console.log(`| floor | ${f10.toFixed(0)} | ${f100k.toFixed(0)} | ${(f100k - f10).toFixed(0)} | ${(f100k / f10).toFixed(2)} |`);
  console.log(`| qmux | ${q10.toFixed(0)} | ${q100k.toFixed(0)} | ${(q100k - q10).toFixed(0)} | ${(q100k / q10).toFixed(2)} |`);
  console.log(`\nqmux's 10-key cost plus the floor's difference: ${((q10 + f100k - f10) / q10).toFixed(2)}x the 10-key cost.`);
}
