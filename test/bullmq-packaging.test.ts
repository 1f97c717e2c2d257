/**
 * `qmux/bullmq` is a subpath export whose peer dependencies are optional (SPEC 9): the built
 * package, installed where bullmq and ioredis are not, still loads as `qmux`, and `qmux/bullmq`
 * throws an error that names both packages and the install line. Uses dist/ (npm test builds
 * first), copied to a temporary node_modules so that the repo's own bullmq cannot be found.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNode } from './helpers.js';
import { bareInstall } from './support/bare-install.js';

describe('qmux/bullmq without bullmq and ioredis installed', () => {
  let dir: string;
  beforeAll(() => {
    dir = bareInstall('qmux-nobull-');
    writeFileSync(
      join(dir, 'probe.mjs'),
      [
        "const qmux = await import('qmux');",
        "console.log('qmux loaded', typeof qmux.Worker);",
        'try {',
        "  await import('qmux/bullmq');",
        "  console.log('qmux/bullmq loaded');",
        '} catch (error) {',
        "  console.log('qmux/bullmq threw', error.constructor.name + ': ' + error.message);",
        '}',
      ].join('\n'),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("import 'qmux' works without them; importing qmux/bullmq throws naming both and npm install bullmq ioredis", async () => {
    const run = await runNode([join(dir, 'probe.mjs')], 20_000);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('qmux loaded function');
    expect(run.stdout).toContain(
      'qmux/bullmq threw Error: qmux/bullmq needs the packages "bullmq" and "ioredis", which are not installed: npm install bullmq ioredis',
    );
  });

  it('with them installed (this repo), qmux/bullmq exports BullMQSource', async () => {
    const run = await runNode(['--input-type=module', '-e', "const m = await import('qmux/bullmq'); console.log(typeof m.BullMQSource);"], 20_000);
    expect(run.stdout.trim()).toBe('function');
  });
});
