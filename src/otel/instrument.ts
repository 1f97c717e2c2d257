import type {
  Attributes,
  BatchObservableResult,
  Context,
  Histogram,
  Meter,
  MeterProvider,
  Observable,
  ObservableCounter,
  ObservableGauge,
  ProxyTracerProvider,
  Span,
  SpanOptions,
  Tracer,
  TracerProvider,
} from '@opentelemetry/api';
import { monotonicClock } from '../shell/clock.js';
import { TimeoutError } from '../api/errors.js';
import type { WorkerHealth } from '../observe/health.js';
import { isError, messageOf, safeString } from '../api/describe.js';
import { describeValue } from '../internal/validate.js';
import type { WorkerTap } from '../internal/worker-tap.js';
import type { JobRecord } from '../handles/job.js';
import { UNTIMED } from '../core/job-record.js';
import { Registry, watchRegistry } from '../ops/registry.js';
import type { Source } from '../sources/source.js';
import type { WorkerCounters } from '../api/stats.js';
import { tapWorker, type Worker, type WorkerStatus } from '../shell/worker.js';

// Loaded here, not at the top of the package: only `import 'qmux/otel'` needs the peer dependency.
let api: typeof import('@opentelemetry/api');
try {
  api = await import('@opentelemetry/api');
} catch (cause) {
  throw new Error('qmux/otel needs the package "@opentelemetry/api", which is not installed: npm install @opentelemetry/api', { cause });
}

/** Options of {@link instrument}. */
export interface InstrumentOptions {
  /** Where spans go. Default: the global tracer provider (`trace.getTracerProvider()`), a no-op until an SDK registers one. */
  tracerProvider?: TracerProvider;
  /** Where metrics go. Default: the global meter provider (`metrics.getMeterProvider()`), a no-op until an SDK registers one. */
  meterProvider?: MeterProvider;
  /** Put a keyed job's key on its spans as `qmux.key`. Default `false`: a key often names a tenant or a user. */
  recordKeys?: boolean;
}

/** What the API's global tracer provider delegates to while no SDK has registered one. */
const NOOP_TRACER_PROVIDER = new api.ProxyTracerProvider().getDelegate();

/** The name qmux's tracer and meter carry (the instrumentation scope). */
const SCOPE = 'qmux';

const COUNTERS: readonly [name: string, field: keyof WorkerCounters, unit: string, description: string][] = [
  ['qmux.jobs.added', 'added', '{job}', 'Jobs added to the source (a retry is not a new job; a de-duplicated add is not counted).'],
  ['qmux.jobs.started', 'started', '{attempt}', 'Attempts started: a job retried twice counts three.'],
  ['qmux.jobs.succeeded', 'succeeded', '{job}', 'Jobs that succeeded.'],
  ['qmux.jobs.failed', 'failed', '{job}', 'Jobs that failed for good (their last attempt failed, or retryIf said no).'],
  ['qmux.jobs.retried', 'retried', '{attempt}', 'Failed attempts that were retried.'],
  ['qmux.jobs.cancelled', 'cancelled', '{job}', 'Jobs cancelled, waiting or running (handle, signal, purge, shutdown).'],
  ['qmux.jobs.deduplicated', 'deduplicated', '{job}', 'Adds that returned the handle of a job already in use with the same id.'],
  ['qmux.jobs.dead', 'dead', '{job}', 'Jobs that failed for good and were kept as dead letters.'],
];

const STATUSES: readonly WorkerStatus[] = ['initiated', 'idle', 'running', 'pausing', 'paused', 'stopping', 'stopped', 'halted'];
const HEALTHS: readonly WorkerHealth['status'][] = ['healthy', 'degraded', 'halted'];

/** Per source, made once: its span name, the options every span of it starts with, and its metric attributes. */
interface SourceInstruments {
  name: string;
  options: SpanOptions;
  /** `qmux.worker` and `qmux.source`: the attributes of its histogram points. */
  attributes: Attributes;
}

/** What one instrumented job carries while it is in use: its parent context and its running attempt. */
class JobTrace {
  /** The context active at the add: each attempt's span is its child. */
  readonly parent: Context;
  /** When it was added (the worker's clock), for the wait histogram; `UNTIMED` when metrics are off. */
  readonly addedAt: number;
  /** The running attempt's span, or undefined between attempts. */
  span: Span | undefined = undefined;
  /** When the running attempt started (the worker's clock), or `UNTIMED`. */
  startedAt = UNTIMED;

  constructor(parent: Context, addedAt: number) {
    this.parent = parent;
    this.addedAt = addedAt;
  }
}

/**
 * The instruments of one `instrument()` call and the taps it put on workers. Its `run` and
 * `added` are the hot path: with the API's no-op providers they allocate nothing but what the
 * no-op tracer does (one non-recording span per attempt).
 */
class Instrumentation {
  readonly #tracer: Tracer;
  /** The API's global provider when no `tracerProvider` was given: a no-op until an SDK sets its delegate. */
  readonly #proxy: ProxyTracerProvider | undefined;
  readonly #meter: Meter;
  /** False when the meter is the API's no-op one: no clock reading, no per-job record for metrics. */
  readonly #metricsOn: boolean;
  readonly #recordKeys: boolean;
  readonly #waitTime: Histogram;
  readonly #runTime: Histogram;
  readonly #counters: [ObservableCounter, keyof WorkerCounters][] = [];
  readonly #waiting: ObservableGauge;
  readonly #running: ObservableGauge;
  readonly #slotsInUse: ObservableGauge;
  readonly #concurrency: ObservableGauge;
  readonly #status: ObservableGauge;
  readonly #health: ObservableGauge;
  readonly #observables: Observable[];
  readonly #observe = (result: BatchObservableResult): void => this.#collect(result);
  /** Per job while it is in use: its parent context and running attempt. Weak: a job never seen settling is not kept. */
  readonly #jobs = new WeakMap<JobRecord, JobTrace>();
  /** Per source: its span name and the options every span of it starts with (no allocation per attempt). */
  readonly #spanOptions = new WeakMap<Source, SourceInstruments>();
  /** The attempt {@link #call} runs next: set just before `context.with` calls it. */
  #job: JobRecord | undefined = undefined;
  #handler: ((job: JobRecord) => unknown) | undefined = undefined;
  readonly #call = (): unknown => {
    const job = this.#job as JobRecord;
    const handler = this.#handler as (job: JobRecord) => unknown;
    this.#job = undefined;
    this.#handler = undefined;
    return handler(job);
  };
  /** The workers tapped, each with its listeners, so that removing undoes exactly what was done. */
  readonly #workers = new Map<Worker<never, unknown>, () => void>();

  constructor(options: InstrumentOptions) {
    const tracerProvider = options.tracerProvider ?? api.trace.getTracerProvider();
    this.#proxy = tracerProvider instanceof api.ProxyTracerProvider ? tracerProvider : undefined;
    this.#tracer = tracerProvider.getTracer(SCOPE);
    const meter = (this.#meter = (options.meterProvider ?? api.metrics.getMeterProvider()).getMeter(SCOPE));
    this.#recordKeys = options.recordKeys === true;
    this.#waitTime = meter.createHistogram('qmux.job.wait.duration', {
      unit: 's',
      description: 'Seconds from add (or from becoming due) to the start of the first attempt, every job.',
    });
    this.#runTime = meter.createHistogram('qmux.job.run.duration', {
      unit: 's',
      description: 'Seconds from the start of an attempt to its end (settled, timed out or cancelled), every attempt.',
    });
    // The no-op meter's instruments are all one class: with it, skip the clock and the records.
    this.#metricsOn = this.#waitTime.constructor !== api.createNoopMeter().createHistogram(SCOPE).constructor;
    for (const [name, field, unit, description] of COUNTERS) {
      this.#counters.push([meter.createObservableCounter(name, { unit, description }), field]);
    }
    this.#waiting = meter.createObservableGauge('qmux.jobs.waiting', {
      unit: '{job}',
      description: 'Jobs waiting in the source, by qmux.job.state: due (may start now) or delayed (not due yet).',
    });
    this.#running = meter.createObservableGauge('qmux.jobs.running', { unit: '{job}', description: 'Jobs of the source running now.' });
    this.#slotsInUse = meter.createObservableGauge('qmux.worker.slots.in_use', {
      unit: '{slot}',
      description: 'Slots in use: attempts whose handler has not settled yet.',
    });
    this.#concurrency = meter.createObservableGauge('qmux.worker.concurrency', {
      unit: '{slot}',
      description: 'Most attempts the worker runs at once (Infinity when unbounded).',
    });
    this.#status = meter.createObservableGauge('qmux.worker.status', {
      description: "The worker's status as a state set (qmux.worker.status): 1 for the current one, 0 for every other.",
    });
    this.#health = meter.createObservableGauge('qmux.worker.health', {
      description: "The worker's health as a state set (qmux.worker.health): 1 for the current one, 0 for every other.",
    });
    this.#observables = [
      ...this.#counters.map(([counter]) => counter),
      this.#waiting,
      this.#running,
      this.#slotsInUse,
      this.#concurrency,
      this.#status,
      this.#health,
    ];
    meter.addBatchObservableCallback(this.#observe, this.#observables);
  }

  /**
   * Taps `worker`: its adds capture the context, its attempts run in spans, its events end them.
   * A worker another `instrument()` call has tapped throws when `strict`, else is left to it (a
   * worker added to an instrumented registry: `registry.add` must not throw for it).
   */
  tap(worker: Worker<never, unknown>, strict: boolean): void {
    const tap: WorkerTap = { added: (job) => this.#added(job), run: (job, handler) => this.#run(worker, job, handler) };
    const previous = tapWorker(worker, tap);
    if (previous !== null) {
      tapWorker(worker, previous);
      if (!strict) return;
      throw new TypeError(
        `qmux/otel: instrument(): worker "${worker.name}" is already instrumented; call the function the earlier instrument() returned first`,
      );
    }
    const onCompleted = (job: unknown): void => this.#ended(job as JobRecord, 'succeeded', undefined, false);
    const onFailed = (job: unknown, error: unknown): void => this.#ended(job as JobRecord, 'failed', error, false);
    const onRetrying = (job: unknown, error: unknown): void => this.#ended(job as JobRecord, 'failed', error, true);
    const onCancelled = (job: unknown): void => this.#ended(job as JobRecord, 'cancelled', (job as JobRecord).value, false);
    worker.on('completed', onCompleted);
    worker.on('failed', onFailed);
    worker.on('retrying', onRetrying);
    worker.on('cancelled', onCancelled);
    this.#workers.set(worker, () => {
      tapWorker(worker, null);
      worker.off('completed', onCompleted);
      worker.off('failed', onFailed);
      worker.off('retrying', onRetrying);
      worker.off('cancelled', onCancelled);
    });
  }

  /** Undoes everything: taps, listeners, the metrics callback. The spans of attempts still running are never ended, so never exported. */
  remove(): void {
    for (const untap of this.#workers.values()) untap();
    this.#workers.clear();
    this.#meter.removeBatchObservableCallback(this.#observe, this.#observables);
  }

  #added(job: JobRecord): void {
    const parent = api.context.active();
    // Outside any context and without metrics (the no-op API), a job needs no record at all.
    if (parent === api.ROOT_CONTEXT && !this.#metricsOn) return;
    this.#jobs.set(job, new JobTrace(parent, this.#metricsOn ? monotonicClock.now() : UNTIMED));
  }

  #run(worker: Worker<never, unknown>, job: JobRecord, handler: (job: never) => unknown): unknown {
    let trace = this.#jobs.get(job);
    let parent: Context;
    if (trace !== undefined) parent = trace.parent;
    else if (job.home.isRemote) parent = remoteParent(job.data);
    else parent = api.ROOT_CONTEXT;
    const { name, options, attributes } = this.#optionsOf(worker, job.home as Source);
    // The global provider before an SDK registers one: no span to make (the no-op's would be an
    // allocation for nothing). Asked per attempt, as an SDK may be registered at any time.
    const proxy = this.#proxy;
    if (proxy !== undefined && proxy.getDelegate() === NOOP_TRACER_PROVIDER && !this.#metricsOn) {
      this.#job = job;
      this.#handler = handler as (job: JobRecord) => unknown;
      return api.context.with(parent, this.#call);
    }
    const span = this.#tracer.startSpan(name, options, parent);
    const recording = span.isRecording();
    if (recording) {
      span.setAttribute('messaging.message.id', job.id);
      span.setAttribute('qmux.attempt', job.attempts);
      if (this.#recordKeys && job.key !== undefined) span.setAttribute('qmux.key', job.key);
    }
    if (recording || this.#metricsOn) {
      if (trace === undefined) this.#jobs.set(job, (trace = new JobTrace(parent, UNTIMED)));
      if (recording) trace.span = span;
      if (this.#metricsOn) {
        const now = monotonicClock.now();
        trace.startedAt = now;
        if (job.attempts === 1 && trace.addedAt !== UNTIMED) {
          // A delayed job waits from its due time, not from its add.
          const from = job.dueAt !== UNTIMED && job.dueAt > trace.addedAt ? job.dueAt : trace.addedAt;
          this.#waitTime.record(Math.max(0, now - from) / 1000, attributes);
        }
      }
    }
    // Spans the handler starts are children of this attempt's; so is anything it runs later. A
    // no-op tracer's span (invalid, not recording) adds nothing to the parent: no context to copy.
    const active = recording || api.isSpanContextValid(span.spanContext()) ? api.trace.setSpan(parent, span) : parent;
    // The job and handler go through fields, not `with`'s rest arguments or a closure: nothing
    // allocated per attempt. `#call` reads them before anything else runs.
    this.#job = job;
    this.#handler = handler as (job: JobRecord) => unknown;
    return api.context.with(active, this.#call);
  }

  /** The end of an attempt (`retrying`, or the job's end), or of a job that was waiting (`cancelled`, `failed`). */
  #ended(job: JobRecord, outcome: 'succeeded' | 'failed' | 'cancelled', error: unknown, retrying: boolean): void {
    const trace = this.#jobs.get(job);
    if (trace === undefined) return;
    if (!retrying) this.#jobs.delete(job);
    const span = trace.span;
    const startedAt = trace.startedAt;
    trace.span = undefined;
    trace.startedAt = UNTIMED;
    if (startedAt !== UNTIMED) {
      const cached = this.#spanOptions.get(job.home as Source);
      this.#runTime.record(Math.max(0, monotonicClock.now() - startedAt) / 1000, cached?.attributes);
    }
    if (span === undefined) return;
    if (outcome === 'failed') {
      const timedOut = error instanceof TimeoutError;
      span.setAttribute('qmux.attempt.outcome', timedOut ? 'timed_out' : 'failed');
      span.setAttribute('error.type', errorType(error));
      span.recordException(isError(error) ? error : safeString(error));
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: timedOut ? `timed out: ${messageOf(error)}` : messageOf(error) });
    } else if (outcome === 'cancelled') {
      span.setAttribute('qmux.attempt.outcome', 'cancelled');
      // The job's value is its CancelledError, whose message says so and gives the reason.
      span.setAttribute('error.type', errorType(error));
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: messageOf(error) });
    } else {
      span.setAttribute('qmux.attempt.outcome', 'succeeded');
    }
    span.end();
  }

  #optionsOf(worker: Worker<never, unknown>, source: Source): SourceInstruments {
    let cached = this.#spanOptions.get(source);
    if (cached === undefined) {
      const attributes: Attributes = { 'qmux.worker': worker.name, 'qmux.source': source.name };
      const spanAttributes: Attributes = {
        'messaging.system': 'qmux',
        'messaging.operation.type': 'process',
        'messaging.destination.name': source.name,
        ...attributes,
      };
      cached = { name: `process ${source.name}`, options: { kind: api.SpanKind.CONSUMER, attributes: spanAttributes }, attributes };
      this.#spanOptions.set(source, cached);
    }
    return cached;
  }

  #collect(result: BatchObservableResult): void {
    for (const worker of this.#workers.keys()) {
      const stats = worker.stats();
      const health = worker.health().status;
      const own = { 'qmux.worker': stats.name };
      result.observe(this.#slotsInUse, stats.running, own);
      result.observe(this.#concurrency, stats.concurrency, own);
      for (const status of STATUSES) result.observe(this.#status, status === stats.status ? 1 : 0, { ...own, 'qmux.worker.status': status });
      for (const state of HEALTHS) result.observe(this.#health, state === health ? 1 : 0, { ...own, 'qmux.worker.health': state });
      for (const [source, s] of Object.entries(stats.sources)) {
        const attributes = { 'qmux.worker': stats.name, 'qmux.source': source };
        for (const [counter, field] of this.#counters) result.observe(counter, s.counters[field], attributes);
        result.observe(this.#waiting, s.due, { ...attributes, 'qmux.job.state': 'due' });
        result.observe(this.#waiting, s.delayed, { ...attributes, 'qmux.job.state': 'delayed' });
        result.observe(this.#running, s.running, attributes);
      }
    }
  }
}

/** A remote job's parent: the context its producer put in `data._otel` (a W3C carrier), else a new trace. */
function remoteParent(data: unknown): Context {
  const carrier = data !== null && typeof data === 'object' ? (data as { _otel?: unknown })._otel : undefined;
  if (carrier === null || typeof carrier !== 'object') return api.ROOT_CONTEXT;
  return api.propagation.extract(api.ROOT_CONTEXT, carrier);
}

function errorType(error: unknown): string {
  if (isError(error)) return safeString(error.name);
  return error === null ? 'null' : typeof error;
}

/**
 * Connects a worker, or every worker of a registry (those it has and those added later), to
 * OpenTelemetry (SPEC 15), and returns a function that removes it all again.
 *
 * Traces: one span per attempt, named `process <source>`, kind `CONSUMER`, with
 * `messaging.system: 'qmux'`, `messaging.operation.type: 'process'`,
 * `messaging.destination.name` (the source), `messaging.message.id` (the job id), `qmux.worker`,
 * `qmux.source`, `qmux.attempt` and, only with `recordKeys: true`, `qmux.key`. Its parent is the
 * span active when the job was added (a request's trace shows the jobs it caused; each retry is a
 * new child of the same parent), and the handler runs with the attempt's span active, so spans it
 * starts nest under it. A failed attempt ends with status `ERROR` and the exception recorded;
 * `qmux.attempt.outcome` says `succeeded`, `failed`, `timed_out` or `cancelled`. A remote job
 * (BullMQ) starts a new trace, or continues the one whose W3C context its producer put in
 * `data._otel` (read through the registered propagator).
 *
 * Metrics (the figures of `registry.metrics()`, with attributes `qmux.worker` and `qmux.source`):
 * observable counters `qmux.jobs.{added,started,succeeded,failed,retried,cancelled,deduplicated,dead}`,
 * observable gauges `qmux.jobs.waiting` (`qmux.job.state`: `due` or `delayed`), `qmux.jobs.running`,
 * `qmux.worker.slots.in_use`, `qmux.worker.concurrency`, `qmux.worker.status` and
 * `qmux.worker.health` (state sets), and histograms `qmux.job.wait.duration` and
 * `qmux.job.run.duration` in seconds, recorded for every job (not sampled).
 *
 * Throws a `TypeError` when `target` is neither a `Worker` nor a `Registry`, when an option is
 * of the wrong type, or when a worker is already instrumented.
 *
 * @example
 * ```ts
 * import { instrument } from 'qmux/otel';
 *
 * const uninstrument = instrument(registry); // the global providers, once the SDK registers them
 * // ...
 * uninstrument();
 * ```
 */
export function instrument<T, R>(target: Registry | Worker<T, R>, options?: InstrumentOptions): () => void {
  const opts = checkOptions(options);
  const isRegistry = target instanceof Registry;
  if (!isRegistry && (target === null || typeof target !== 'object' || typeof (target as { stats?: unknown }).stats !== 'function')) {
    throw new TypeError(`qmux/otel: instrument(target) needs a Worker or a Registry, got ${describeValue(target)}`);
  }
  const instrumentation = new Instrumentation(opts);
  let watching = false;
  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    if (watching) watchRegistry(target as Registry, null);
    instrumentation.remove();
  };
  try {
    if (isRegistry) {
      const previous = watchRegistry(target, (worker) => instrumentation.tap(worker, false));
      if (previous !== null) {
        watchRegistry(target, previous);
        throw new TypeError(
          'qmux/otel: instrument(): this registry is already instrumented; call the function the earlier instrument() returned first',
        );
      }
      watching = true;
      for (const name of target.names()) instrumentation.tap(target.get(name) as Worker<never, unknown>, true);
    } else instrumentation.tap(target as unknown as Worker<never, unknown>, true);
  } catch (error) {
    remove();
    throw error;
  }
  return remove;
}

const OPTION_FIELDS = ['tracerProvider', 'meterProvider', 'recordKeys'];

function checkOptions(options: InstrumentOptions | undefined): InstrumentOptions {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`qmux/otel: instrument() options must be an object, got ${describeValue(options)}`);
  }
  for (const field of Object.keys(options)) {
    if (!OPTION_FIELDS.includes(field)) {
      throw new TypeError(`qmux/otel: instrument() has no option "${field}"; the options are ${OPTION_FIELDS.join(', ')}`);
    }
  }
  const { tracerProvider, meterProvider, recordKeys } = options;
  if (tracerProvider !== undefined && typeof (tracerProvider as { getTracer?: unknown })?.getTracer !== 'function') {
    throw new TypeError(
      `qmux/otel: instrument() option "tracerProvider" must be a TracerProvider (with getTracer), got ${describeValue(tracerProvider)}`,
    );
  }
  if (meterProvider !== undefined && typeof (meterProvider as { getMeter?: unknown })?.getMeter !== 'function') {
    throw new TypeError(
      `qmux/otel: instrument() option "meterProvider" must be a MeterProvider (with getMeter), got ${describeValue(meterProvider)}`,
    );
  }
  if (recordKeys !== undefined && typeof recordKeys !== 'boolean') {
    throw new TypeError(`qmux/otel: instrument() option "recordKeys" must be a boolean, got ${describeValue(recordKeys)}`);
  }
  return options;
}
