/** Waiting on causes in the tests that need real time (Redis, threads, a browser). */

/** Polls `check` (every 20 ms) until it holds, or fails after `boundMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, boundMs = 15_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${boundMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves after `ms` of real time. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
