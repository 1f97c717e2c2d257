import type { FileHandle } from 'node:fs/promises';
import type { ReadableStream, TransformStream, WritableStream } from 'node:stream/web';
import type { MessagePort } from 'node:worker_threads';

/**
 * What the `transfer` add option can move into a worker thread instead of copying: what Node's
 * `postMessage` transfers on every Node qmux supports (20 to 26). Our own type, not
 * `node:worker_threads`' `TransferListItem`: `@types/node` 26 no longer has that one, and with it
 * a consumer's declarations would fail to compile (or, with `skipLibCheck`, `transfer` would
 * silently become `any`).
 */
export type ThreadTransferable = ArrayBuffer | MessagePort | FileHandle | ReadableStream | WritableStream | TransformStream;
