/**
 * The key of what a thread task fails with when its handler threw (or rejected with) `null`:
 * tinypool reads a null error as success, so the thread sends `{ [THREW_NULL]: true }` instead,
 * and the main thread fails the job with a `ThreadTaskError` that reports `null`.
 *
 * @internal
 */
export const THREW_NULL = 'qmux.threwNull';
