/**
 * A real redis-server for the BullMQ tests (SPEC 9): one per test file, on a free loopback port,
 * without persistence (`--save '' --appendonly no`), in a temporary directory under /tmp, stopped
 * afterwards. Without redis-server on the PATH the tests are skipped with a notice that says how
 * to install it, unless QMUX_REQUIRE_REDIS=1 (CI), which makes them fail instead.
 *
 * Also used by examples/bullmq-shared.ts and bench/, so it is plain Node (no vitest).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Whether `redis-server` can be run here. */
export const redisServerInstalled: boolean = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** Whether a missing redis-server must fail the tests (CI) rather than skip them. */
export const redisRequired: boolean = process.env.QMUX_REQUIRE_REDIS === '1';

/**
 * Whether the Redis tests of the calling file can run. Without redis-server they skip with
 * {@link REDIS_MISSING_NOTICE}, or, with QMUX_REQUIRE_REDIS=1, the file gets a failing test instead.
 */
export function redisAvailable(): boolean {
  if (!redisServerInstalled && !redisRequired) console.warn(REDIS_MISSING_NOTICE);
  describe.runIf(!redisServerInstalled && redisRequired)('redis-server is required (QMUX_REQUIRE_REDIS=1)', () => {
    it('is installed', () => {
      expect.fail('redis-server is not on the PATH; install it with `apt-get install redis-server`');
    });
  });
  return redisServerInstalled;
}

export const REDIS_MISSING_NOTICE =
  'qmux: redis-server is not installed, so the BullMQ tests are SKIPPED. Install it with `apt-get install redis-server` ' +
  '(or set QMUX_REQUIRE_REDIS=1 to make its absence fail the suite, as CI does).';

/** A free TCP port on 127.0.0.1 (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export class RedisServer {
  readonly host = '127.0.0.1';
  readonly port: number;
  readonly dir: string;
  #child: ChildProcess | undefined = undefined;
  #frozen = false;

  private constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
  }

  /** Starts a server on a free port in a new temporary directory. */
  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), mkdtempSync(join(tmpdir(), 'qmux-redis-')));
    await server.#spawn();
    return server;
  }

  /** ioredis connection options for it. */
  get connection(): { host: string; port: number; maxRetriesPerRequest: null } {
    return { host: this.host, port: this.port, maxRetriesPerRequest: null };
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  #spawn(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        'redis-server',
        ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--dbfilename', 'dump.rdb'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let output = '';
      const onData = (chunk: string): void => {
        output += chunk;
        if (output.includes('Ready to accept connections')) {
          child.stdout?.off('data', onData);
          child.stdout?.resume();
          this.#child = child;
          resolve();
        }
      };
      child.stdout?.setEncoding('utf8').on('data', onData);
      child.stderr?.resume();
      child.once('error', reject);
      child.once('exit', (code) => {
        if (this.#child === child) {
          this.#child = undefined;
          this.#frozen = false;
        }
        reject(new Error(`redis-server exited with ${code} before it was ready:\n${output}`));
      });
    });
  }

  /**
   * Stops the server. With `keepData`, it saves its data first (SHUTDOWN SAVE), so that
   * {@link restart} brings it back with its data, like a server that went away and came back.
   */
  async stop(options: { keepData?: boolean } = {}): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.thaw(); // a stopped process takes no SIGTERM, and answers no SHUTDOWN
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (options.keepData) spawnSync('redis-cli', ['-h', this.host, '-p', String(this.port), 'SHUTDOWN', 'SAVE'], { stdio: 'ignore' });
    else child.kill('SIGTERM');
    await exited;
    this.#child = undefined;
  }

  /**
   * Freezes the server (SIGSTOP): its connections stay open and nothing answers, as with a hung
   * Redis or a network that drops packets silently. {@link thaw} lets it go on; {@link stop} and
   * {@link destroy} thaw it first.
   */
  freeze(): void {
    if (this.#child === undefined || this.#frozen) return;
    this.#child.kill('SIGSTOP');
    this.#frozen = true;
  }

  /** Lets a frozen server go on (SIGCONT): it answers what it was sent meanwhile. */
  thaw(): void {
    if (this.#child === undefined || !this.#frozen) return;
    this.#child.kill('SIGCONT');
    this.#frozen = false;
  }

  /** Whether it is frozen ({@link freeze}). */
  get frozen(): boolean {
    return this.#frozen;
  }

  /** Starts it again on the same port and directory (loading what {@link stop} saved). */
  async restart(): Promise<void> {
    if (this.#child !== undefined) return;
    await this.#spawn();
  }

  /** Stops it and removes its directory. */
  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
