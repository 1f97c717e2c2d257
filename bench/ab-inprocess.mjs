#!/usr/bin/env node
// A/B of two qmux builds on the no-op cell inside ONE process, rounds alternated:
//
//   node --expose-gc bench/ab-inprocess.mjs <distA> <distB> [rounds=15] [jobs=200000] [concurrency=16]
//   AB_STRATEGY_B=RoundRobin node --expose-gc bench/ab-inprocess.mjs <dist> <copy of it> ...
//   AB_KEYS=100000 node --expose-gc bench/ab-inprocess.mjs <distA> <distB> ...
//   AB_HELD=1 node --expose-gc bench/ab-inprocess.mjs <distA> <distB> ...
//   AB_CONTEXT=1 node --expose-gc bench/ab-inprocess.mjs dist dist ...
//
// With AB_STRATEGY_A / AB_STRATEGY_B set to a strategy's name, that side runs the `strategies`
// cell instead (4 queues, jobs spread `i % 4`, under that strategy): given two copies of one
// dist/, this measures a strategy on 4 sources against one queue, the ratio of issue 13's goal.
// With AB_KEYS set to a number of keys K, both sides run the `keys` cell of bench/keys-cpu.mjs
// (one queue bound with keys, job i of key i % K). With AB_HELD set, both sides run the no-op
// cell with one delayed job held for an hour in the same queue (`heldRound`). With AB_CONTEXT
// set, both sides run the no-op cell, A with `asyncContext: false` and B with `asyncContext: true`
// (the default): given one dist/ twice, the pair ratio is what async context costs (SPEC 13).
//
// <distA> and <distB> are built `dist/` directories (e.g. /tmp/base/dist and ./dist). Each is
// imported once, so each has its own module instances, classes and optimized code. A round is
// the `noop` cell of bench/cell.mjs (a fresh worker, `jobs` fire-and-forget adds of
// `() => Promise.resolve()`, then waitUntilIdle), measured in CPU ns/job; the round function is
// imported once per side too (a query string apiece), so no call site in the harness sees both
// builds. Rounds go A,B then B,A, each after gc(). Prints the median ns/job of each side and the
// median of the per-pair ratios B/A, as one JSON line.
//
// Why in one process: on the project's machine a fresh process's median of the same cell moves
// by 2x from one process to the next (rounds within one process by 3x), so fresh-process A/B
// needs dozens of processes to read a 5 % difference. Within one process, A/A runs (two copies
// of the same dist/) gave pair ratios of 0.92 to 1.09. Run it a few times, both ways round, and
// compare with an A/A run before believing a ratio. What it cannot see: anything that one build's garbage does to the
// other's heap (both share it), and start-up.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const USAGE = 'usage: node --expose-gc bench/ab-inprocess.mjs <distA> <distB> [rounds=15] [jobs=200000] [concurrency=16]\n';
const [argA, argB, argRounds, argJobs, argConcurrency] = process.argv.slice(2);
if (argA === undefined || argB === undefined) {
  process.stderr.write(USAGE);
  process.exit(2);
}
if (typeof globalThis.gc !== 'function') {
  process.stderr.write(`run it with node --expose-gc\n${USAGE}`);
  process.exit(2);
}
const rounds = Number(argRounds ?? 15);
const jobs = Number(argJobs ?? 200_000);
const concurrency = Number(argConcurrency ?? 16);

const keys = process.env.AB_KEYS ? Number(process.env.AB_KEYS) : undefined;
const held = Boolean(process.env.AB_HELD);
const context = Boolean(process.env.AB_CONTEXT);
const round = new URL('./ab-inprocess-round.mjs', import.meta.url);
const side = async (dir, tag, strategy) => {
  const { Worker, Strategy } = await import(pathToFileURL(path.join(path.resolve(dir), 'index.js')).href);
  const { noopRound, strategyRound, keysRound, heldRound } = await import(`${round.href}?${tag}`);
  if (keys !== undefined) return (n) => keysRound(Worker, keys, n, concurrency);
  if (held) return (n) => heldRound(Worker, n, concurrency);
  if (context) return (n) => noopRound(Worker, n, concurrency, tag === 'b');
  if (strategy === undefined) return (n) => noopRound(Worker, n, concurrency);
  if (Strategy?.[strategy] === undefined) throw new Error(`Strategy.${strategy} is not exported by ${dir}`);
  return (n) => strategyRound(Worker, Strategy, strategy, n, concurrency);
};
const runA = await side(argA, 'a', process.env.AB_STRATEGY_A || undefined);
const runB = await side(argB, 'b', process.env.AB_STRATEGY_B || undefined);

// Warm-up: each side's code optimized before anything is timed.
for (const run of [runA, runB, runA, runB]) await run(20_000);

const a = [];
const b = [];
const ratios = [];
for (let i = 0; i < rounds; i++) {
  const order = i % 2 === 0 ? [runA, runB] : [runB, runA];
  const measured = [];
  for (const run of order) {
    globalThis.gc();
    measured.push(await run(jobs));
  }
  const [nsA, nsB] = i % 2 === 0 ? measured : measured.reverse();
  a.push(nsA);
  b.push(nsB);
  ratios.push(nsB / nsA);
}
const median = (values) => [...values].sort((x, y) => x - y)[values.length >> 1];
console.log(
  JSON.stringify({
    a: path.resolve(argA),
    b: path.resolve(argB),
    strategyA: process.env.AB_STRATEGY_A || null,
    strategyB: process.env.AB_STRATEGY_B || null,
    keys: keys ?? null,
    held,
    asyncContext: context ? { a: false, b: true } : null,
    rounds,
    jobs,
    concurrency,
    medianA: Math.round(median(a)),
    medianB: Math.round(median(b)),
    pairRatio: Number(median(ratios).toFixed(3)),
  }),
);
