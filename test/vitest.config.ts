import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    include: ['test/**/*.test.ts'],
    // Takes qmux's beforeExit listener off after each file: see the file.
    setupFiles: ['test/setup/exit-warning.ts'],
    // Thread and child-process tests need headroom on a loaded 2-core CI machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
