/**
 * `qmux/otel` against the real OpenTelemetry SDK (SPEC 15): spans per attempt with their
 * attributes, parented on the span active at the add (through the AsyncLocalStorage context
 * manager), retries, failures, timeouts and cancels, the metrics through a reader, and that
 * removing the instrumentation leaves the worker as it was.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { type DataPoint, type Histogram, MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { Registry, TimeoutError, Worker, type Job } from '../src/index.js';
import { instrument } from '../src/otel/index.js';
import { flushMicrotasks, sleep, useVirtualTime } from './helpers.js';
import { MemoryEngine } from './support/memory-engine.js';

class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

const exporter = new InMemorySpanExporter();
const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const requestTracer = tracerProvider.getTracer('test');
const contextManager = new AsyncLocalStorageContextManager();
let reader: TestReader;
let meterProvider: MeterProvider;

beforeAll(() => {
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  context.disable();
  propagation.disable();
});
beforeEach(() => {
  exporter.reset();
  reader = new TestReader();
  meterProvider = new MeterProvider({ readers: [reader] });
});
afterEach(async () => {
  await meterProvider.shutdown();
});

useVirtualTime(1_000_000);

const jobSpans = () => exporter.getFinishedSpans().filter((span) => span.name.startsWith('process '));

/** Runs `body` inside a request span, returning the span. */
function inRequest(name: string, body: () => void): Span {
  return requestTracer.startActiveSpan(name, (span) => {
    body();
    span.end();
    return span;
  });
}

async function collect(): Promise<ResourceMetrics> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  return resourceMetrics;
}

function points(metrics: ResourceMetrics, name: string): DataPoint<number | Histogram>[] {
  for (const scope of metrics.scopeMetrics)
    for (const metric of scope.metrics) if (metric.descriptor.name === name) return metric.dataPoints as DataPoint<number | Histogram>[];
  return [];
}

describe('qmux/otel traces', () => {
  it('one CONSUMER span per attempt, named process <source>, with the messaging attributes, parented on the request that added the job', async () => {
    const worker = new Worker<string, void>(() => {}, { name: 'mailer' });
    const queue = worker.bindQueue({ name: 'emails' });
    const uninstrument = instrument(worker, { tracerProvider, meterProvider });
    // Both adds in one tick, the first request's job starting the pass: each job keeps its own parent.
    const first = inRequest('request 1', () => void queue.add('a'));
    const second = inRequest('request 2', () => void queue.add('b'));
    worker.start();
    await worker.waitUntilIdle();
    const spans = jobSpans();
    expect(spans).toHaveLength(2);
    const [a, b] = spans as [(typeof spans)[0], (typeof spans)[0]];
    expect(a.name).toBe('process emails');
    expect(a.kind).toBe(SpanKind.CONSUMER);
    expect(a.attributes).toEqual({
      'messaging.system': 'qmux',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'emails',
      'messaging.message.id': expect.any(String),
      'qmux.worker': 'mailer',
      'qmux.source': 'emails',
      'qmux.attempt': 1,
      'qmux.attempt.outcome': 'succeeded',
    });
    expect(a.status.code).toBe(SpanStatusCode.UNSET);
    expect(a.spanContext().traceId).toBe(first.spanContext().traceId);
    expect(a.parentSpanContext?.spanId).toBe(first.spanContext().spanId);
    expect(b.spanContext().traceId).toBe(second.spanContext().traceId);
    expect(b.parentSpanContext?.spanId).toBe(second.spanContext().spanId);
    uninstrument();
  });

  it('spans the handler starts nest under its attempt, even after an await', async () => {
    const worker = new Worker<string, void>(async () => {
      await flushMicrotasks(2);
      requestTracer.startSpan('send').end();
    });
    const queue = worker.bindQueue({ name: 'q' });
    const uninstrument = instrument(worker, { tracerProvider, meterProvider });
    inRequest('request', () => void queue.add('a'));
    worker.start();
    await worker.waitUntilIdle();
    const attempt = jobSpans()[0];
    const send = exporter.getFinishedSpans().find((span) => span.name === 'send');
    expect(send?.parentSpanContext?.spanId).toBe(attempt?.spanContext().spanId);
    uninstrument();
  });

  it('a job added outside any span starts a new trace', async () => {
    const worker = new Worker<string, void>(() => {});
    const queue = worker.bindQueue();
    const uninstrument = instrument(worker, { tracerProvider, meterProvider });
    queue.add('a');
    worker.start();
    await worker.waitUntilIdle();
    expect(jobSpans()).toHaveLength(1);
    expect(jobSpans()[0]?.parentSpanContext).toBeUndefined();
    uninstrument();
  });

  it('each retry is a new child of the same parent; a failed attempt has status ERROR and the exception recorded', async () => {
    let calls = 0;
    const worker = new Worker<string, void>(
      () => {
        calls++;
        throw new Error(`boom ${calls}`);
      },
      { retry: { attempts: 3, backoff: { type: 'fixed', delay: 10 } } },
    );
    const queue = worker.bindQueue({ name: 'q' });
    const uninstrument = instrument(worker, { tracerProvider, meterProvider });
    const request = inRequest('request', () => void queue.add('a'));
    worker.start();
    await vi.advanceTimersByTimeAsync(100);
    await worker.waitUntilIdle();
    const spans = jobSpans();
    expect(spans.map((span) => span.attributes['qmux.attempt'])).toEqual([1, 2, 3]);
    expect(new Set(spans.map((span) => span.spanContext().spanId)).size).toBe(3);
    for (const [i, span] of spans.entries()) {
      expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: `boom ${i + 1}` });
      expect(span.attributes['qmux.attempt.outcome']).toBe('failed');
      expect(span.attributes['error.type']).toBe('Error');
      expect(span.events.map((event) => [event.name, event.attributes?.['exception.message']])).toEqual([['exception', `boom ${i + 1}`]]);
    }
    uninstrument();
  });

  it('a timed-out attempt and a cancelled one say so', async () => {
    const worker = new Worker<string, void>(
      (job: Job<string>) => new Promise((_, reject) => job.signal.addEventListener('abort', () => reject(job.signal.reason))),
      { concurrency: 2 },
    );
    const queue = worker.bindQueue({ name: 'q' });
    const uninstrument = instrument(worker, { tracerProvider, meterProvider });
    queue.add('slow', { timeout: 50 });
    const cancelled = queue.add('cancelled');
    worker.start();
    await flushMicrotasks();
    cancelled.cancel('changed my mind');
    await vi.advanceTimersByTimeAsync(60);
    await worker.waitUntilIdle();
    const byOutcome = Object.fromEntries(jobSpans().map((span) => [span.attributes['qmux.attempt.outcome'], span]));
    expect(Object.keys(byOutcome).sort()).toEqual(['cancelled', 'timed_out']);
    expect(byOutcome.timed_out?.status.code).toBe(SpanStatusCode.ERROR);
    expect(byOutcome.timed_out?.status.message).toMatch(/^timed out: /);
    expect(byOutcome.timed_out?.attributes['error.type']).toBe(new TimeoutError(50, 'x').name);
    expect(byOutcome.cancelled?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'qmux: job cancelled: changed my mind' });
    expect(byOutcome.cancelled?.attributes['error.type']).toBe('CancelledError');
    uninstrument();
  });

  it('the key is on the span only with recordKeys: true', async () => {
    for (const recordKeys of [false, true]) {
      exporter.reset();
      const worker = new Worker<{ tenant: string }, void>(() => {});
      const queue = worker.bindQueue({ keys: { by: (data) => data.tenant } });
      const uninstrument = instrument(worker, { tracerProvider, meterProvider, recordKeys });
      queue.add({ tenant: 'acme' });
      worker.start();
      await worker.waitUntilIdle();
      expect(jobSpans()[0]?.attributes['qmux.key']).toBe(recordKeys ? 'acme' : undefined);
      uninstrument();
    }
  });

  it('a remote job starts a new trace, or continues the one in data._otel', async () => {
    const parent = requestTracer.startSpan('producer');
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(ROOT_CONTEXT, parent), carrier);
    const engine = new MemoryEngine();
    const r1 = engine.add({ n: 1 });
    const r2 = engine.add({ n: 2, _otel: carrier });
    const worker = new Worker<unknown, void>(() => {});
    const uninstrument = instrument(worker, { tracerProvider, meterProvider });
    inRequest('unrelated request', () => void worker.bindRemote(engine.adapter(), { name: 'remote' }));
    for (let i = 0; i < 50 && jobSpans().length < 2; i++) await vi.advanceTimersByTimeAsync(10);
    await worker.stop();
    const spans = jobSpans();
    expect(spans.map((span) => span.attributes['messaging.message.id'])).toEqual([r1, r2]);
    expect(spans[0]?.parentSpanContext).toBeUndefined();
    expect(spans[1]?.spanContext().traceId).toBe(parent.spanContext().traceId);
    expect(spans[1]?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    uninstrument();
  });

  it('a registry: its workers and those added later; uninstrument removes the taps, the listeners and the metrics', async () => {
    const registry = new Registry();
    const a = new Worker<string, void>(() => {}, { name: 'a' });
    const qa = a.bindQueue({ name: 'qa' });
    registry.add(a);
    const listeners = a.listenerCount('completed');
    const uninstrument = instrument(registry, { tracerProvider, meterProvider });
    const b = new Worker<string, void>(() => {}, { name: 'b' });
    const qb = b.bindQueue({ name: 'qb' });
    registry.add(b);
    qa.add('x');
    qb.add('y');
    a.start();
    b.start();
    await Promise.all([a.waitUntilIdle(), b.waitUntilIdle()]);
    expect(
      jobSpans()
        .map((span) => span.name)
        .sort(),
    ).toEqual(['process qa', 'process qb']);
    expect(points(await collect(), 'qmux.jobs.succeeded')).toHaveLength(2);
    expect(() => instrument(a, { tracerProvider })).toThrow(/worker "a" is already instrumented/);
    expect(() => instrument(registry, { tracerProvider })).toThrow(/this registry is already instrumented/);
    // A worker instrumented on its own joins an instrumented registry without a throw, and keeps its own.
    const own = new Worker<string, void>(() => {}, { name: 'own' });
    const uninstrumentOwn = instrument(own, { tracerProvider });
    registry.add(own);
    uninstrumentOwn();

    uninstrument();
    exporter.reset();
    expect(a.listenerCount('completed')).toBe(listeners);
    const c = new Worker<string, void>(() => {}, { name: 'c' });
    const qc = c.bindQueue({ name: 'qc' });
    registry.add(c);
    for (const queue of [qa, qb, qc]) queue.add('z');
    c.start();
    await Promise.all([a.waitUntilIdle(), b.waitUntilIdle(), c.waitUntilIdle()]);
    expect(jobSpans()).toEqual([]);
    // The SDK keeps reporting the last values it saw; they no longer move.
    expect(points(await collect(), 'qmux.jobs.succeeded').map((p) => p.value)).toEqual([1, 1]);
    // And it can be instrumented again.
    instrument(a, { tracerProvider })();
  });

  it('the global provider: no span while no SDK is registered, spans from the attempt after it registers', async () => {
    const worker = new Worker<string, void>(() => {});
    const queue = worker.bindQueue({ name: 'q' });
    const uninstrument = instrument(worker);
    worker.start();
    queue.add('before');
    await worker.waitUntilIdle();
    expect(jobSpans()).toEqual([]);
    trace.setGlobalTracerProvider(tracerProvider);
    try {
      queue.add('after');
      await worker.waitUntilIdle();
      expect(jobSpans().map((span) => span.name)).toEqual(['process q']);
    } finally {
      trace.disable();
      uninstrument();
    }
  });

  it('bad arguments throw a TypeError naming what is allowed', () => {
    expect(() => instrument({} as never)).toThrow(/instrument\(target\) needs a Worker or a Registry/);
    const worker = new Worker(() => {});
    expect(() => instrument(worker, { recordKey: true } as never)).toThrow(
      /no option "recordKey"; the options are tracerProvider, meterProvider, recordKeys/,
    );
    expect(() => instrument(worker, { tracerProvider: {} as never })).toThrow(/"tracerProvider" must be a TracerProvider/);
    expect(() => instrument(worker, { recordKeys: 'yes' as never })).toThrow(/"recordKeys" must be a boolean/);
  });
});

describe('qmux/otel metrics', () => {
  it('counters and gauges mirror stats(); wait and run histograms in seconds hold every job', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = new Worker<number, void>(
      async (job: Job<number>) => {
        if (job.data === 0) await gate;
        else await sleep(job.data);
      },
      { name: 'w', concurrency: 2 },
    );
    const queue = worker.bindQueue({ name: 'q' });
    const uninstrument = instrument(worker, { meterProvider });
    queue.add(0);
    for (let i = 1; i <= 20; i++) queue.add(100);
    queue.add(5, { delay: 1_000 });
    worker.start();
    await flushMicrotasks();
    let metrics = await collect();
    const attributes = { 'qmux.worker': 'w', 'qmux.source': 'q' };
    expect(points(metrics, 'qmux.jobs.added')).toEqual([expect.objectContaining({ attributes, value: 22 })]);
    expect(points(metrics, 'qmux.jobs.started')[0]?.value).toBe(2);
    expect(points(metrics, 'qmux.jobs.running')[0]?.value).toBe(2);
    expect(points(metrics, 'qmux.jobs.waiting').map((p) => [p.attributes['qmux.job.state'], p.value])).toEqual([
      ['due', 19],
      ['delayed', 1],
    ]);
    expect(points(metrics, 'qmux.worker.slots.in_use')).toEqual([expect.objectContaining({ attributes: { 'qmux.worker': 'w' }, value: 2 })]);
    expect(points(metrics, 'qmux.worker.concurrency')[0]?.value).toBe(2);
    expect(
      points(metrics, 'qmux.worker.status')
        .filter((p) => p.value === 1)
        .map((p) => p.attributes['qmux.worker.status']),
    ).toEqual(['running']);
    expect(
      points(metrics, 'qmux.worker.health')
        .filter((p) => p.value === 1)
        .map((p) => p.attributes['qmux.worker.health']),
    ).toEqual(['healthy']);

    await vi.advanceTimersByTimeAsync(2_500);
    release();
    await worker.waitUntilIdle();
    metrics = await collect();
    expect(points(metrics, 'qmux.jobs.succeeded')[0]?.value).toBe(22);
    const wait = points(metrics, 'qmux.job.wait.duration')[0]?.value as Histogram;
    const run = points(metrics, 'qmux.job.run.duration')[0]?.value as Histogram;
    expect(points(metrics, 'qmux.job.wait.duration')[0]?.attributes).toEqual(attributes);
    expect(points(metrics, 'qmux.job.run.duration')[0]?.attributes).toEqual(attributes);
    // Every job, not a sample: 22 waits and 22 runs.
    expect(wait.count).toBe(22);
    expect(run.count).toBe(22);
    // 20 jobs of 100 ms on one free slot (the other held by job 0): the last waited 1.9 s.
    expect(wait.max).toBeCloseTo(1.9, 5);
    // The delayed job (due at 1 s, a slot free then) waited from its due time, not from its add.
    expect(wait.min).toBe(0);
    expect(run.max).toBeCloseTo(2.5, 5);
    expect(run.min).toBeCloseTo(0.005, 5);
    uninstrument();
  });
});
