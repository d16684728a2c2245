import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, resolveConfig } from '../../src/config.ts';
import { DEFAULT_UPLOAD_IDLE_MS, writeFileAtomic } from '../../src/fs/write-file.ts';
import { WriteFileError } from '../../src/fs/write-file-error.ts';
import { parseWriteTarget } from '../../src/fs/write-target.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'bta-unit-fs-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function* chunks(...parts: Array<string | Error>): AsyncIterable<Uint8Array> {
  for (const part of parts) {
    if (part instanceof Error) throw part;
    yield Buffer.from(part);
  }
}

const write = (file: string, mode: string, body: AsyncIterable<Uint8Array>, maxBytes = 1 << 20) =>
  writeFileAtomic(parseWriteTarget(file, mode), body, { maxBytes });

async function errorOf(promise: Promise<unknown>): Promise<WriteFileError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof WriteFileError) return err;
    throw err;
  }
  throw new Error('did not fail');
}

const leftovers = (inDir: string) => readdirSync(inDir).filter((n) => n.endsWith('.bta-upload'));

describe('parseWriteTarget', () => {
  it('normalizes the path', () => {
    expect(parseWriteTarget('/tmp//a/./b/../c.txt').path).toBe('/tmp/a/c.txt');
  });

  it('reads 3- and 4-digit octal modes, special bits included', () => {
    expect(parseWriteTarget('/f', '640').mode).toBe(0o640);
    expect(parseWriteTarget('/f', '4755').mode).toBe(0o4755);
    expect(parseWriteTarget('/f').mode).toBe(0o644);
  });

  it.each([
    ['relative', '644', 'path'],
    ['/with\0nul', '644', 'path'],
    ['/dir/', '644', 'path'],
    ['/dir/..', '644', 'path'],
    ['/', '644', 'path'],
    ['/f', '999', 'mode'],
    ['/f', '12345', 'mode'],
    ['/f', '64', 'mode'],
    ['/f', '0o644', 'mode'],
  ])('rejects path %j with mode %j as 400 on %s', (p, mode, field) => {
    const error = (() => {
      try {
        parseWriteTarget(p, mode);
      } catch (err) {
        return err as WriteFileError;
      }
      return undefined;
    })();
    expect([error?.status, error?.code, error?.field]).toEqual([400, 'invalid_input', field]);
  });

  it.each([
    ['a 5000-character name', `/tmp/${'n'.repeat(5000)}`],
    ['a name of 256 bytes (128 two-byte characters)', `/tmp/${'é'.repeat(128)}`],
    ['a path of 4096 bytes', `/${'d/'.repeat(2047)}f`],
  ])('rejects %s as 400 on path', (_name, p) => {
    let error: WriteFileError | undefined;
    try {
      parseWriteTarget(p);
    } catch (err) {
      error = err as WriteFileError;
    }
    expect([error?.status, error?.code, error?.field]).toEqual([400, 'invalid_input', 'path']);
  });

  it('accepts a name of 255 bytes and a path of 4095 bytes', () => {
    expect(parseWriteTarget(`/tmp/${'n'.repeat(255)}`).path).toHaveLength(5 + 255);
    expect(parseWriteTarget(`/${'d/'.repeat(2046)}fg`).path).toHaveLength(4095);
  });
});

describe('writeFileAtomic', () => {
  it('writes every chunk in order', async () => {
    const file = path.join(dir, 'chunks.txt');
    await write(file, '644', chunks('one ', 'two ', 'three'));
    expect(readFileSync(file, 'utf8')).toBe('one two three');
  });

  it('sets special mode bits exactly', async () => {
    const file = path.join(dir, 'setgid');
    await write(file, '2750', chunks('x'));
    expect(statSync(file).mode & 0o7777).toBe(0o2750);
  });

  it('keeps the old file and removes the temporary file when the body fails midway', async () => {
    const file = path.join(dir, 'keep-on-error.txt');
    writeFileSync(file, 'old');
    const error = await errorOf(write(file, '644', chunks('new content', new Error('boom'))));
    expect(error.status).toBe(500);
    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(leftovers(dir)).toEqual([]);
  });

  it('reports an aborted upload as such, not as a server error', async () => {
    const file = path.join(dir, 'aborted.txt');
    const aborted = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
    const error = await errorOf(write(file, '644', chunks('partial', aborted)));
    expect([error.status, error.code]).toEqual([400, 'bad_request']);
    expect(leftovers(dir)).toEqual([]);
  });

  it('stops at the size limit with 413 while streaming and writes nothing', async () => {
    const file = path.join(dir, 'too-big.txt');
    writeFileSync(file, 'old');
    const error = await errorOf(write(file, '644', chunks('12345', '67890'), 8));
    expect([error.status, error.code]).toEqual([413, 'payload_too_large']);
    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(leftovers(dir)).toEqual([]);
  });

  it('accepts a body of exactly the limit', async () => {
    const file = path.join(dir, 'exact.txt');
    await write(file, '644', chunks('1234', '5678'), 8);
    expect(readFileSync(file, 'utf8')).toBe('12345678');
  });

  it('refuses a declared length over the limit before creating anything', async () => {
    const file = path.join(dir, 'declared', 'big.txt');
    const error = await errorOf(writeFileAtomic(parseWriteTarget(file), chunks('x'), { maxBytes: 8, declaredLength: 9 }));
    expect(error.status).toBe(413);
    expect(() => statSync(path.dirname(file))).toThrow();
  });

  it('writes through a symlink to an existing file and keeps the link', async () => {
    const real = path.join(dir, 'real.txt');
    const link = path.join(dir, 'link.txt');
    writeFileSync(real, 'old');
    symlinkSync(real, link);
    await write(link, '600', chunks('via link'));
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(real);
    expect([readFileSync(real, 'utf8'), statSync(real).mode & 0o777]).toEqual(['via link', 0o600]);
  });

  it('answers 409 for a symlink to a directory', async () => {
    const link = path.join(dir, 'dir-link');
    symlinkSync(dir, link);
    expect((await errorOf(write(link, '644', chunks('x')))).status).toBe(409);
  });

  it.each(['/proc/self/bta-cannot-write', '/proc/self/comm', '/sys/bta-cannot-write', '/dev/bta-cannot-write'])(
    'refuses %s with 400 invalid_input on path',
    async (target) => {
      const error = await errorOf(write(target, '644', chunks('x')));
      expect([error.status, error.code, error.field]).toEqual([400, 'invalid_input', 'path']);
      expect(existsSync('/dev/bta-cannot-write')).toBe(false);
    },
  );

  it('gives up with 408 on a body that sends nothing for idleTimeoutMs, removing the temporary file', async () => {
    const file = path.join(dir, 'stalled.txt');
    writeFileSync(file, 'old');
    async function* stalls(): AsyncIterable<Uint8Array> {
      yield Buffer.from('first part');
      await new Promise(() => undefined);
    }
    const started = Date.now();
    const error = await errorOf(writeFileAtomic(parseWriteTarget(file), stalls(), { maxBytes: 1024, idleTimeoutMs: 50 }));
    expect([error.status, error.code]).toEqual([408, 'bad_request']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(leftovers(dir)).toEqual([]);
  });

  it('gives up with 408 on a body whose first chunk never comes', async () => {
    async function* never(): AsyncIterable<Uint8Array> {
      await new Promise(() => undefined);
      yield new Uint8Array(); // never reached
    }
    const error = await errorOf(writeFileAtomic(parseWriteTarget(path.join(dir, 'never.txt')), never(), { maxBytes: 1024, idleTimeoutMs: 20 }));
    expect(error.status).toBe(408);
    expect(leftovers(dir)).toEqual([]);
  });

  it('has a default idle timeout of 30 s', () => {
    expect(DEFAULT_UPLOAD_IDLE_MS).toBe(30_000);
  });

  it('lets concurrent writers to one path each land whole, the last rename winning', async () => {
    const file = path.join(dir, 'race.txt');
    const a = 'a'.repeat(100_000);
    const b = 'b'.repeat(50_000);
    await Promise.all([write(file, '644', chunks(a.slice(0, 50_000), a.slice(50_000))), write(file, '644', chunks(b))]);
    expect([a, b]).toContain(readFileSync(file, 'utf8'));
    expect(leftovers(dir)).toEqual([]);
  });
});

// The agent usually runs as an unprivileged user (deploy/): there, replacing a file cannot keep
// its owner, and the kernel may silently drop a setgid bit. A child process running as nobody
// plays that user against the real file system.
describe('writeFileAtomic as an unprivileged user (a child process running as nobody)', () => {
  const NOBODY = 65534;
  let home: string;
  let runner: string;

  beforeAll(async () => {
    home = mkdtempSync(path.join(os.tmpdir(), 'bta-unit-nobody-'));
    chmodSync(home, 0o755);
    runner = path.join(home, 'runner.mjs');
    await build({
      stdin: {
        contents: `
          import { writeFileAtomic } from './src/fs/write-file.ts';
          import { parseWriteTarget } from './src/fs/write-target.ts';
          const [file, mode] = process.argv.slice(2);
          async function* body() { yield Buffer.from('written by ' + process.getuid()); }
          try {
            await writeFileAtomic(parseWriteTarget(file, mode), body(), { maxBytes: 1024 });
            console.log(JSON.stringify({ ok: true }));
          } catch (err) {
            console.log(JSON.stringify({ status: err.status, code: err.code, message: err.message }));
          }`,
        resolveDir: process.cwd(),
        loader: 'ts',
        sourcefile: 'nobody-runner.ts',
      },
      outfile: runner,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      logLevel: 'warning',
    });
    chmodSync(runner, 0o644);
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  /** Runs one writeFileAtomic as nobody; the outcome, or the error's status and code. */
  function writeAsNobody(file: string, mode: string): { ok?: true; status?: number; code?: string; message?: string } {
    const result = spawnSync(process.execPath, [runner, file, mode], { uid: NOBODY, gid: NOBODY, cwd: home, encoding: 'utf8', timeout: 10_000 });
    if (result.status !== 0) throw new Error(`the runner failed (${result.status}): ${result.stderr}`);
    return JSON.parse(result.stdout) as { ok?: true };
  }

  /** A directory of `home` with the given owner and mode. */
  function directory(name: string, uid: number, gid: number, mode: number): string {
    const d = path.join(home, name);
    mkdirSync(d);
    chownSync(d, uid, gid);
    chmodSync(d, mode);
    return d;
  }

  it('keeps setuid and setgid on its own file written twice', () => {
    const file = path.join(directory('own', NOBODY, NOBODY, 0o755), 'tool');
    expect(writeAsNobody(file, '6755')).toEqual({ ok: true });
    expect(writeAsNobody(file, '6755')).toEqual({ ok: true });
    const info = statSync(file);
    expect([info.uid, info.mode & 0o7777]).toEqual([NOBODY, 0o6755]);
  });

  it("replaces root's file in its own directory with the exact mode, the owner becoming nobody", () => {
    const file = path.join(directory('replaces-root', NOBODY, NOBODY, 0o755), 'was-root.txt');
    writeFileSync(file, 'old', { mode: 0o644 });
    expect(writeAsNobody(file, '4755')).toEqual({ ok: true });
    const info = statSync(file);
    expect([readFileSync(file, 'utf8'), info.uid, info.mode & 0o7777]).toEqual([`written by ${NOBODY}`, NOBODY, 0o4755]);
  });

  it('answers 403 forbidden, writing nothing, when the kernel drops a setgid bit nobody may set', () => {
    // New files in a setgid directory take its group (root here), and a user outside that group
    // cannot set setgid on them: fchmod succeeds without the bit.
    const d = directory('setgid-root-group', 0, 0, 0o2777);
    const result = writeAsNobody(path.join(d, 'tool'), '2755');
    expect([result.status, result.code]).toEqual([403, 'forbidden']);
    expect(readdirSync(d)).toEqual([]);
  });

  it('answers 403 forbidden when the directory is not writable for it', () => {
    const d = directory('root-only', 0, 0, 0o755);
    const result = writeAsNobody(path.join(d, 'file.txt'), '644');
    expect([result.status, result.code]).toEqual([403, 'forbidden']);
    expect(readdirSync(d)).toEqual([]);
  });
});

describe('write_file settings (--fs-allow, --upload-idle-ms)', () => {
  it('reads --fs-allow as colon-separated absolute directories, normalized', () => {
    expect(parseConfig(['--fs-allow', '/var/lib/bta:/tmp/uploads/'], {}).fsAllow).toEqual(['/var/lib/bta', '/tmp/uploads']);
  });

  it('reads FS_ALLOW from the environment', () => {
    expect(parseConfig([], { FS_ALLOW: '/srv/files' }).fsAllow).toEqual(['/srv/files']);
  });

  it('leaves write_file unrestricted without --fs-allow', () => {
    expect(parseConfig([], {}).fsAllow).toBeUndefined();
  });

  it.each(['relative/dir', '/a::/b', '/a:', '/a,/b'])('rejects --fs-allow %j with one line naming the flag', (value) => {
    expect(() => parseConfig(['--fs-allow', value], {})).toThrow(/--fs-allow/);
  });

  it('reads --upload-idle-ms and UPLOAD_IDLE_MS, 30000 by default', () => {
    expect(parseConfig([], {}).uploadIdleMs).toBe(30_000);
    expect(parseConfig(['--upload-idle-ms', '250'], {}).uploadIdleMs).toBe(250);
    expect(parseConfig([], { UPLOAD_IDLE_MS: '1000' }).uploadIdleMs).toBe(1000);
    expect(() => parseConfig(['--upload-idle-ms', '0'], {})).toThrow(/--upload-idle-ms/);
  });

  it('checks fsAllow and uploadIdleMs passed in code', () => {
    expect(resolveConfig({ fsAllow: ['/srv/a/'], uploadIdleMs: 100 })).toMatchObject({ fsAllow: ['/srv/a'], uploadIdleMs: 100 });
    expect(() => resolveConfig({ fsAllow: ['relative'] })).toThrow(/fsAllow/);
    expect(() => resolveConfig({ fsAllow: [] })).toThrow(/fsAllow/);
    expect(() => resolveConfig({ uploadIdleMs: -1 })).toThrow(/uploadIdleMs/);
  });
});
