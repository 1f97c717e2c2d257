/**
 * Runs with every test file. Tests leave workers paused or never started with jobs waiting on
 * purpose; when the test process ends, qmux's beforeExit listener (SPEC 2) would warn about each
 * of them, and a reader of `npm test` would take those warnings for failures. This takes that
 * listener off once the file's tests are done, for the source build and the built one (each
 * module instance has its own). test/exit-warning.test.ts checks the warning in child processes.
 */
import { afterAll } from 'vitest';
import { warnAboutStrandedJobs as fromSource } from '../../src/shell/exit-warning.js';

afterAll(async () => {
  process.removeListener('beforeExit', fromSource);
  try {
    const built = (await import('../../dist/shell/exit-warning.js' as string)) as { warnAboutStrandedJobs: () => void };
    process.removeListener('beforeExit', built.warnAboutStrandedJobs);
  } catch {
    // not built yet: nothing of it was loaded
  }
});
