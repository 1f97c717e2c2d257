/**
 * Flags of the host process that threads should inherit: the ones that load code (so a
 * TypeScript handler works under `tsx`), resolve modules, or only change diagnostics.
 * Anything else is dropped, because `new Worker()` rejects flags such as `--input-type` or `-e`
 * and tinypool would then fail every thread (SPEC 7).
 */
const KEEP_WITH_VALUE = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--conditions', '-C']);
const KEEP_ALONE = new Set([
  '--enable-source-maps',
  '--no-warnings',
  '--no-deprecation',
  '--experimental-vm-modules',
  '--experimental-import-meta-resolve',
  '--experimental-strip-types',
  '--experimental-transform-types',
]);

/**
 * The subset of `execArgv` that is safe and useful in worker threads.
 *
 * @internal
 */
export function threadExecArgv(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string;
    const eq = arg.indexOf('=');
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    if (KEEP_WITH_VALUE.has(flag)) {
      if (eq >= 0) {
        kept.push(arg);
      } else if (i + 1 < execArgv.length) {
        kept.push(arg, execArgv[i + 1] as string);
        i++;
      }
    } else if (KEEP_ALONE.has(flag)) {
      kept.push(arg);
    } else if (eq < 0 && i + 1 < execArgv.length && !(execArgv[i + 1] as string).startsWith('-') && takesValue(flag)) {
      i++; // drop a dropped flag's separate value too (e.g. `--input-type module`, `-e "code"`)
    }
  }
  return kept;
}

/** Flags we drop whose value may come as the next argument. */
function takesValue(flag: string): boolean {
  return flag === '-e' || flag === '--eval' || flag === '-p' || flag === '--print' || flag === '--input-type' || flag === '--title';
}
