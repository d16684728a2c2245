import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRig, TOKEN, type TestRig } from './harness.ts';

const LIMIT = 16 * 1024 * 1024;

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

describe('PUT /browsers/{id}/fs/write_file', () => {
  let rig: TestRig;
  let dir: string;
  let savedUmask: number;

  beforeAll(async () => {
    savedUmask = process.umask(0o022);
    rig = await startRig({ limits: { maxUploadBytes: LIMIT }, tokens: [{ token: 'reader-token', scopes: ['telemetry:read'] }] });
    dir = mkdtempSync(path.join(os.tmpdir(), 'bta-fs-'));
  });
  afterAll(async () => {
    process.umask(savedUmask);
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    process.umask(0o022);
  });

  const url = (query: Record<string, string>) => `${rig.agent.url}/browsers/${rig.agent.sessionId}/fs/write_file?${new URLSearchParams(query)}`;
  const put = async (query: Record<string, string>, body: string | Buffer, headers: Record<string, string> = {}): Promise<Reply> => {
    const res = await fetch(url(query), {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/octet-stream', ...headers },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
    const text = await res.text();
    const replyHeaders: http.IncomingHttpHeaders = {};
    res.headers.forEach((value, name) => (replyHeaders[name] = value));
    return { status: res.status, headers: replyHeaders, body: text === '' ? undefined : JSON.parse(text) };
  };
  const mode = (file: string) => statSync(file).mode & 0o7777;
  const tempFiles = (inDir: string) => readdirSync(inDir).filter((name) => name.endsWith('.bta-upload'));

  /** A chunked upload the test feeds by hand. */
  function startUpload(query: Record<string, string>) {
    let resolveReply!: (reply: Reply) => void;
    let rejectReply!: (err: Error) => void;
    const reply = new Promise<Reply>((resolve, reject) => {
      resolveReply = resolve;
      rejectReply = reject;
    });
    const req = http.request(url(query), {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolveReply({ status: res.statusCode!, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) }));
    });
    req.on('error', rejectReply);
    req.flushHeaders();
    const write = (chunk: Buffer) => new Promise<void>((resolve) => (req.write(chunk) ? resolve() : req.once('drain', resolve)));
    return { req, reply, write };
  }

  async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('creates a new file with mode 0600 exactly under umask 022, answering 201 with no body', async () => {
    const file = path.join(dir, 'new-0600.txt');
    const res = await put({ path: file, mode: '0600' }, 'secret');
    expect([res.status, res.body]).toEqual([201, undefined]);
    expect(readFileSync(file, 'utf8')).toBe('secret');
    expect(mode(file)).toBe(0o600);
  });

  it('gives an overwritten 0644 file the requested mode 0755', async () => {
    const file = path.join(dir, 'was-0644.sh');
    writeFileSync(file, 'old', { mode: 0o644 });
    const res = await put({ path: file, mode: '755' }, '#!/bin/sh\n');
    expect(res.status).toBe(201);
    expect([readFileSync(file, 'utf8'), mode(file)]).toEqual(['#!/bin/sh\n', 0o755]);
  });

  it('applies mode bits the umask would remove', async () => {
    process.umask(0o077);
    const file = path.join(dir, 'group-readable.txt');
    await put({ path: file, mode: '0664' }, 'x');
    expect(mode(file)).toBe(0o664);
  });

  it('defaults the mode to 0644', async () => {
    const file = path.join(dir, 'default-mode.txt');
    await put({ path: file }, 'x');
    expect(mode(file)).toBe(0o644);
  });

  it('creates missing parent directories with mode 0755 whatever the umask', async () => {
    process.umask(0o077);
    const file = path.join(dir, 'a', 'b', 'c', 'file.txt');
    const res = await put({ path: file }, 'deep');
    expect(res.status).toBe(201);
    expect([mode(path.join(dir, 'a')), mode(path.join(dir, 'a', 'b')), mode(path.join(dir, 'a', 'b', 'c'))]).toEqual([0o755, 0o755, 0o755]);
    expect(readFileSync(file, 'utf8')).toBe('deep');
  });

  it('writes an empty body as an empty file', async () => {
    const file = path.join(dir, 'empty.txt');
    expect((await put({ path: file }, '')).status).toBe(201);
    expect(statSync(file).size).toBe(0);
  });

  it('keeps binary content byte for byte', async () => {
    const file = path.join(dir, 'binary.bin');
    const bytes = Buffer.from(Array.from({ length: 256 * 16 }, (_, i) => i % 256));
    await put({ path: file }, bytes);
    expect(readFileSync(file).equals(bytes)).toBe(true);
  });

  it.each([
    ['a relative path', { path: 'relative/file.txt' }, 'path'],
    ['a path with a NUL byte', { path: '/PLACEHOLDER/nul\0name' }, 'path'],
    ['mode 999', { path: '/PLACEHOLDER/m999', mode: '999' }, 'mode'],
    ['mode 12345', { path: '/PLACEHOLDER/m12345', mode: '12345' }, 'mode'],
    ['a path ending in a slash', { path: '/PLACEHOLDER/dir/' }, 'path'],
    ['no path at all', { mode: '644' }, 'path'],
  ])('rejects %s with 400 invalid_input and creates nothing', async (_name, query, field) => {
    const target = path.join(dir, `untouched-${field}-${Math.random().toString(36).slice(2)}`);
    const q = Object.fromEntries(Object.entries(query).map(([k, v]) => [k, v.replace('/PLACEHOLDER', target)]));
    const res = await put(q, 'content');
    expect([res.status, res.body.code, res.body.details?.[0]?.field]).toEqual([400, 'invalid_input', field]);
    expect(res.headers['x-should-retry']).toBe('false');
    expect(existsSync(target)).toBe(false);
  });

  it('answers 409 when the path is a directory', async () => {
    const target = path.join(dir, 'is-a-dir');
    mkdirSync(target);
    const res = await put({ path: target }, 'x');
    expect([res.status, res.body.code]).toEqual([409, 'invalid_input']);
    expect(statSync(target).isDirectory()).toBe(true);
  });

  it('answers 409 when a parent is a file', async () => {
    const parent = path.join(dir, 'plain-file');
    writeFileSync(parent, 'keep');
    const res = await put({ path: path.join(parent, 'child.txt') }, 'x');
    expect([res.status, res.body.code, res.headers['x-should-retry']]).toEqual([409, 'invalid_input', 'false']);
    expect(readFileSync(parent, 'utf8')).toBe('keep');
  });

  it('answers 413 to a declared length over the limit and keeps the old file', async () => {
    const file = path.join(dir, 'limit-declared.txt');
    writeFileSync(file, 'old content');
    const res = await put({ path: file }, Buffer.alloc(LIMIT + 1, 0x61));
    expect([res.status, res.body.code]).toEqual([413, 'payload_too_large']);
    expect(readFileSync(file, 'utf8')).toBe('old content');
    expect(tempFiles(dir)).toEqual([]);
  });

  it('answers 413 to a streamed body that grows over the limit and removes its temporary file', async () => {
    const file = path.join(dir, 'limit-streamed.txt');
    writeFileSync(file, 'old content');
    const upload = startUpload({ path: file });
    const chunk = Buffer.alloc(1024 * 1024, 0x62);
    for (let sent = 0; sent <= LIMIT; sent += chunk.length) await upload.write(chunk);
    upload.req.end();
    const res = await upload.reply;
    expect([res.status, res.body.code]).toEqual([413, 'payload_too_large']);
    expect(readFileSync(file, 'utf8')).toBe('old content');
    expect(tempFiles(dir)).toEqual([]);
  });

  it('streams the body into a temporary file beside the destination before the upload ends', async () => {
    const sub = mkdtempSync(path.join(dir, 'stream-'));
    const file = path.join(sub, 'streamed.bin');
    const upload = startUpload({ path: file });
    await upload.write(Buffer.alloc(256 * 1024, 0x63));
    await waitFor(() => tempFiles(sub).some((name) => statSync(path.join(sub, name)).size === 256 * 1024), 'the first chunk on disk');
    expect(existsSync(file)).toBe(false);
    upload.req.end(Buffer.alloc(1024, 0x63));
    expect((await upload.reply).status).toBe(201);
    expect(statSync(file).size).toBe(256 * 1024 + 1024);
    expect(tempFiles(sub)).toEqual([]);
  });

  it('leaves the old file intact and no temporary file when the client aborts mid-upload', async () => {
    const sub = mkdtempSync(path.join(dir, 'abort-'));
    const file = path.join(sub, 'precious.txt');
    writeFileSync(file, 'precious', { mode: 0o600 });
    const upload = startUpload({ path: file, mode: '0644' });
    upload.reply.catch(() => undefined);
    await upload.write(Buffer.alloc(512 * 1024, 0x64));
    await waitFor(() => tempFiles(sub).length === 1, 'the temporary file');
    upload.req.destroy();
    await waitFor(() => tempFiles(sub).length === 0, 'the temporary file to be removed');
    expect([readFileSync(file, 'utf8'), mode(file)]).toEqual(['precious', 0o600]);
  });

  it('never shows a concurrent reader a partial file during a large overwrite', async () => {
    const file = path.join(dir, 'atomic.bin');
    const oldContent = Buffer.alloc(4 * 1024 * 1024, 0x61);
    writeFileSync(file, oldContent);
    const newSize = 12 * 1024 * 1024;
    const upload = startUpload({ path: file });
    let done = false;
    const seen = { old: 0, new: 0, other: 0 };
    const reader = (async () => {
      while (!done) {
        const content = await readFile(file);
        if (content.length === oldContent.length && content.every((b) => b === 0x61)) seen.old++;
        else if (content.length === newSize && content.every((b) => b === 0x62)) seen.new++;
        else seen.other++;
      }
    })();
    const chunk = Buffer.alloc(1024 * 1024, 0x62);
    for (let sent = 0; sent < newSize; sent += chunk.length) await upload.write(chunk);
    upload.req.end();
    expect((await upload.reply).status).toBe(201);
    // Read until the new content has been seen too.
    await waitFor(() => seen.new > 0, 'a read of the new content');
    done = true;
    await reader;
    expect(seen.other).toBe(0);
    expect(seen.old).toBeGreaterThan(0);
  });

  it('answers another content type with 400 bad_request', async () => {
    const file = path.join(dir, 'wrong-type.txt');
    const res = await put({ path: file }, 'x', { 'content-type': 'text/plain' });
    expect([res.status, res.body.code]).toEqual([400, 'bad_request']);
    expect(existsSync(file)).toBe(false);
  });

  it('refuses a token without the fs scope with 403', async () => {
    const file = path.join(dir, 'forbidden.txt');
    const res = await fetch(url({ path: file }), {
      method: 'PUT',
      headers: { authorization: 'Bearer reader-token', 'content-type': 'application/octet-stream' },
      body: 'x',
    });
    expect(res.status).toBe(403);
    expect(existsSync(file)).toBe(false);
  });
});
