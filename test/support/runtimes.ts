/**
 * Bun and Deno for the tests that run qmux on them (SPEC 14). Their binaries come from the npm
 * registry's `bun` and `deno` packages, which `.ci/run` installs outside the repository and names
 * in QMUX_BUN and QMUX_DENO. Without those variables the tests skip with a notice, unless
 * QMUX_REQUIRE_RUNTIMES=1 (CI), which makes a missing runtime a failure.
 */
import { existsSync } from 'node:fs';

/** A runtime other than Node, and how to run a script with it. */
export interface OtherRuntime {
  name: 'bun' | 'deno';
  /** The binary, or undefined when it was not given. */
  binary: string | undefined;
  /** The arguments that run `file` (Deno needs its permissions granted). */
  args(file: string): string[];
}

const given = (variable: string): string | undefined => {
  const path = process.env[variable];
  return path !== undefined && path !== '' && existsSync(path) ? path : undefined;
};

export const OTHER_RUNTIMES: OtherRuntime[] = [
  { name: 'bun', binary: given('QMUX_BUN'), args: (file) => [file] },
  { name: 'deno', binary: given('QMUX_DENO'), args: (file) => ['run', '--allow-all', file] },
];

/** Whether a missing runtime fails the suite (CI) rather than skipping. */
export const runtimesRequired: boolean = process.env.QMUX_REQUIRE_RUNTIMES === '1';

/** What to say when `runtime` is not available. */
export const runtimeMissingNotice = (runtime: OtherRuntime): string =>
  `${runtime.name}: QMUX_${runtime.name.toUpperCase()} does not name its binary, so the tests that run qmux on ${runtime.name} are skipped ` +
  `(\`npm i --prefix <dir> ${runtime.name}\` and set QMUX_${runtime.name.toUpperCase()}=<dir>/node_modules/.bin/${runtime.name}; ` +
  'QMUX_REQUIRE_RUNTIMES=1 makes its absence fail the suite, as CI does)';
