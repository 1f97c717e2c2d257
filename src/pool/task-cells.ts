/**
 * What a task's cell in the shared memory of a thread pool holds once the main thread has taken
 * the end of its task for an abort (a timeout or a cancel that ends the thread): the thread then
 * sends nothing more and waits to be terminated. Otherwise the cell holds 0 (no thread runs the
 * task yet, or it has finished it) or the id of the thread that runs it.
 *
 * @internal
 */
export const ABORTING = -1;
