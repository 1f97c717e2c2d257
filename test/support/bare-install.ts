/** The built package installed alone, for the tests of optional peer dependencies. */
import { cpSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This repository, whose node_modules the copy must not see. */
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A temporary folder whose node_modules holds qmux as packed (package.json and dist/, which
 * npm test builds first) and its two runtime dependencies, and nothing else: no peer dependency
 * of this repository can be found from there. The caller removes it.
 */
export function bareInstall(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const pkg = join(dir, 'node_modules', 'qmux');
  mkdirSync(pkg, { recursive: true });
  cpSync(join(REPO, 'package.json'), join(pkg, 'package.json'));
  cpSync(join(REPO, 'dist'), join(pkg, 'dist'), { recursive: true });
  for (const dep of ['eventemitter3', 'tinypool']) symlinkSync(join(REPO, 'node_modules', dep), join(dir, 'node_modules', dep));
  return dir;
}
