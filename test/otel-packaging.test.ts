/**
 * `qmux/otel` is a subpath export whose peer dependency is optional (SPEC 15): the built package
 * (package.json and dist/, as packed), installed where `@opentelemetry/api` is not, still loads as
 * `qmux`, so the root entry never loads the API, and `qmux/otel` throws an error that names the
 * package and the install line; with the API installed, `qmux/otel` resolves and instruments a
 * worker. Uses dist/ (npm test builds first), copied to a temporary node_modules so that the repo's
 * own @opentelemetry/api cannot be found.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNode } from './helpers.js';
import { bareInstall, REPO as repo } from './support/bare-install.js';

describe('qmux/otel from the packed package', () => {
  let dir: string;
  beforeAll(() => {
    dir = bareInstall('qmux-otel-');
    writeFileSync(
      join(dir, 'probe.mjs'),
      [
        "const qmux = await import('qmux');",
        "console.log('qmux loaded', typeof qmux.Worker);",
        'try {',
        "  const otel = await import('qmux/otel');",
        "  const worker = new qmux.Worker(() => 'done');",
        '  const uninstrument = otel.instrument(worker);',
        "  worker.bindQueue().add('x');",
        '  worker.start();',
        '  await worker.waitUntilIdle();',
        '  uninstrument();',
        "  console.log('qmux/otel ran', worker.stats().counters.succeeded);",
        '} catch (error) {',
        "  console.log('qmux/otel threw', error.constructor.name + ': ' + error.message);",
        '}',
      ].join('\n'),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("without @opentelemetry/api, import 'qmux' works and qmux/otel throws naming it and npm install @opentelemetry/api", async () => {
    const run = await runNode([join(dir, 'probe.mjs')], 20_000);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('qmux loaded function');
    expect(run.stdout).toContain(
      'qmux/otel threw Error: qmux/otel needs the package "@opentelemetry/api", which is not installed: npm install @opentelemetry/api',
    );
  });

  it('with it installed, qmux/otel resolves and instruments a worker (the no-op provider: nothing registered)', async () => {
    mkdirSync(join(dir, 'node_modules', '@opentelemetry'), { recursive: true });
    symlinkSync(join(repo, 'node_modules', '@opentelemetry', 'api'), join(dir, 'node_modules', '@opentelemetry', 'api'));
    const run = await runNode([join(dir, 'probe.mjs')], 20_000);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('qmux loaded function');
    expect(run.stdout).toContain('qmux/otel ran 1');
  });
});
