/**
 * What qmux asks of the runtime it runs in, read lazily so that `import 'qmux'` loads nothing a
 * browser or an edge runtime lacks (SPEC 14): no `node:` import at module load, no `process` or
 * `setImmediate` taken for granted. Node, Bun and Deno all have `process.getBuiltinModule`
 * (Node >= 20.16, which `engines` covers), so the Node-only features (threads, handler paths, the
 * admin page's hashes) reach their modules through it when first used, and fail with a clear
 * error where there is none.
 */

/** The parts of Node's `process` that qmux uses, where the runtime has them. */
interface HostProcess {
  getBuiltinModule?(id: string): unknown;
  emitWarning?(message: string, options: { type: string; code?: string; detail?: string }): void;
  on?(event: 'beforeExit', listener: () => void): unknown;
}

const hostProcess = (globalThis as { process?: HostProcess }).process;

/** A built-in module of Node (or of Bun and Deno, which provide them), or `undefined` where the runtime has none (a browser). */
export function optionalNodeBuiltin<M>(id: `node:${string}`): M | undefined {
  return hostProcess?.getBuiltinModule?.(id) as M | undefined;
}

/**
 * A built-in module of Node (or of Bun and Deno, which provide them), loaded on first use.
 * Throws a TypeError naming `feature` where the runtime has none (a browser).
 */
export function nodeBuiltin<M>(id: `node:${string}`, feature: string): M {
  const loaded = optionalNodeBuiltin<M>(id);
  if (loaded === undefined) {
    throw new TypeError(`qmux: ${feature} needs ${id}, which this runtime does not provide (it needs Node, Bun or Deno)`);
  }
  return loaded;
}

/**
 * Runs `task` after the I/O of this turn, as Node's `setImmediate` does; where there is none (a
 * browser), in a macrotask of its own.
 */
export const runSoon: (task: () => void) => void =
  typeof globalThis.setImmediate === 'function' ? (task) => void globalThis.setImmediate(task) : (task) => void setTimeout(task, 0);

/** A process warning (Node's `process.emitWarning`); `console.warn` where the runtime has no process. */
export function hostWarning(message: string, options: { type: string; code?: string; detail?: string }): void {
  if (typeof hostProcess?.emitWarning === 'function') {
    hostProcess.emitWarning(message, options);
    return;
  }
  console.warn(`(${options.type}) ${message}${options.detail === undefined ? '' : `\n${options.detail}`}`);
}

/** Calls `listener` when the process is about to exit with nothing left to do; nothing where there is no process. */
export function onBeforeExit(listener: () => void): void {
  if (typeof hostProcess?.on === 'function') hostProcess.on('beforeExit', listener);
}
