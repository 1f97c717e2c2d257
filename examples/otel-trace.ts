// OpenTelemetry: a request's trace shows the jobs it caused (qmux/otel, SPEC 15).
//
//   npm run build && npx tsx examples/otel-trace.ts
//
// Two requests arrive at once; each adds a welcome email and a thumbnail job to one worker at
// concurrency 1, so each job runs while the other request's work is going on. `instrument(worker)`
// gives every attempt a span, `process <source>`, parented on the span that was active when its
// job was added, and runs the handler with that span active, so the handler's own spans (the SMTP
// call) nest under it. The first email fails once and is retried: its second attempt is a second
// child of the same request. The SDK here keeps the spans in memory; the program prints each trace
// as a tree:
//
//   trace of POST /signup ada
//     POST /signup ada
//       process emails  attempt 1  failed: SMTP 421 try again later
//       process emails  attempt 2  succeeded
//         smtp send ada@example.com
//       process thumbnails  attempt 1  succeeded
//   ...
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { Worker, type Job } from 'qmux';
import { instrument } from 'qmux/otel';

// The SDK: spans kept in memory, the active span carried by AsyncLocalStorage.
const exporter = new InMemorySpanExporter();
const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
trace.setGlobalTracerProvider(tracerProvider);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const tracer = trace.getTracer('signup-service');

interface Task {
  kind: 'email' | 'thumbnail';
  user: string;
}

const failedOnce = new Set<string>();
const worker = new Worker<Task, void>(
  async (job: Job<Task>) => {
    if (job.data.kind === 'email') {
      if (job.data.user === 'ada' && !failedOnce.has(job.data.user)) {
        failedOnce.add(job.data.user);
        throw new Error('SMTP 421 try again later');
      }
      // A span the handler starts is a child of the attempt's span.
      await tracer.startActiveSpan(`smtp send ${job.data.user}@example.com`, async (span) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        span.end();
      });
    } else {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  },
  { name: 'signup', concurrency: 1, retry: { attempts: 2 } },
);
const emails = worker.bindQueue({ name: 'emails' });
const thumbnails = worker.bindQueue({ name: 'thumbnails' });
const uninstrument = instrument(worker);

/** A request handler: its span is active while it adds its jobs. */
function signup(user: string): void {
  tracer.startActiveSpan(`POST /signup ${user}`, (span) => {
    emails.add({ kind: 'email', user });
    thumbnails.add({ kind: 'thumbnail', user });
    span.end();
  });
}

signup('ada');
signup('bob');
await worker.waitUntilIdle();
uninstrument();
await tracerProvider.forceFlush();

// Print each trace as a tree, children in start order.
const spans = exporter.getFinishedSpans();
const startOf = (span: ReadableSpan): number => span.startTime[0] * 1e9 + span.startTime[1];
const childrenOf = (parentId: string | undefined): ReadableSpan[] =>
  spans.filter((span) => span.parentSpanContext?.spanId === parentId).sort((a, b) => startOf(a) - startOf(b));
function print(span: ReadableSpan, depth: number): void {
  let line = `${'  '.repeat(depth)}${span.name}`;
  if (span.attributes['qmux.attempt'] !== undefined) {
    const outcome = span.attributes['qmux.attempt.outcome'];
    line += `  attempt ${span.attributes['qmux.attempt']}  ${outcome}${outcome === 'failed' ? `: ${span.status.message}` : ''}`;
  }
  console.log(line);
  for (const child of childrenOf(span.spanContext().spanId)) print(child, depth + 1);
}
for (const root of childrenOf(undefined)) {
  console.log(`trace of ${root.name}`);
  print(root, 1);
}
