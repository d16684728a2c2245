import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/fs/write-file.ts';
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

  it('answers 500 internal_error when the file system refuses the write', async () => {
    const error = await errorOf(write('/proc/self/bta-cannot-write', '644', chunks('x')));
    expect([error.status, error.code]).toEqual([500, 'internal_error']);
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
