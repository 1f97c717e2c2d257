/**
 * `qmux/otel`: OpenTelemetry traces and metrics for a worker or a registry (SPEC 15). Needs the
 * optional peer dependency `@opentelemetry/api` (`npm install @opentelemetry/api`) and, for
 * anything to be recorded, an OpenTelemetry SDK. `import 'qmux'` never loads it.
 *
 * @packageDocumentation
 * @module qmux/otel
 */
export { instrument, type InstrumentOptions } from './instrument.js';
