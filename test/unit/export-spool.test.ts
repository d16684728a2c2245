// The export spool (src/http/export-spool.ts): the body is read to its end whatever the client
// does, the client gets the same bytes in the same order, and `built` runs once.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spooled } from '../../src/http/export-spool.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'bta-spool-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** 64 chunks of 64 KiB: 4 MiB, far more than the spool keeps in memory. */
const chunks = Array.from({ length: 64 }, () => randomBytes(64 * 1024));

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

describe('spooled', () => {
  it('reads the body to its end before the client reads anything', async () => {
    let built!: () => void;
    const isBuilt = new Promise<void>((resolve) => (built = resolve));
    const body = Readable.from(chunks);
    spooled(body, built, dir);
    await isBuilt;
    expect(body.readableEnded).toBe(true);
  });

  it('gives a client that reads late every byte in order', async () => {
    let built!: () => void;
    const isBuilt = new Promise<void>((resolve) => (built = resolve));
    const out = spooled(Readable.from(chunks), built, dir);
    await isBuilt;
    expect((await readAll(out)).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('gives a client that reads at once every byte in order', async () => {
    const out = spooled(Readable.from(chunks), () => undefined, dir);
    expect((await readAll(out)).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('leaves no file in its directory', async () => {
    let built!: () => void;
    const isBuilt = new Promise<void>((resolve) => (built = resolve));
    const out = spooled(Readable.from(chunks), built, dir);
    await isBuilt;
    expect(readdirSync(dir)).toEqual([]);
    await readAll(out);
  });

  it('stops the body and runs built once when the client goes away', async () => {
    const body = new PassThrough();
    let built = 0;
    const out = spooled(body, () => built++, dir);
    body.write(chunks[0]);
    out.destroy();
    await new Promise((resolve) => body.once('close', resolve));
    expect(body.destroyed).toBe(true);
    expect(built).toBe(1);
  });

  it('passes a failure of the body to the client', async () => {
    const body = new PassThrough();
    const out = spooled(body, () => undefined, dir);
    const failed = new Promise<Error>((resolve) => out.once('error', resolve));
    body.destroy(new Error('zip failed'));
    expect((await failed).message).toBe('zip failed');
  });

  it('fails the client, and runs built, when its file cannot be written', async () => {
    let built = 0;
    const out = spooled(Readable.from(chunks), () => built++, join(dir, 'missing'));
    const failed = new Promise<NodeJS.ErrnoException>((resolve) => out.once('error', resolve));
    // Nothing read: the body overflows the memory and the spool opens its file.
    expect((await failed).code).toBe('ENOENT');
    expect(built).toBe(1);
  });
});
