/**
 * `qmux/bullmq`: BullMQ queues as remote sources of a qmux worker (SPEC 9). Needs the optional
 * peer dependencies `bullmq` and `ioredis` (`npm install bullmq ioredis`); importing this module
 * without them throws an error that says so. `import 'qmux'` never loads them.
 *
 * @packageDocumentation
 * @module qmux/bullmq
 */
export { BullMQSource, type BullMQSourceOptions } from './bullmq-source.js';
