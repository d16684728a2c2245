import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRig, TOKEN, type TestRig } from './support/harness.ts';

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

  type Agent = TestRig['agent'];
  const url = (query: Record<string, string>, agent: Agent = rig.agent) =>
    `${agent.url}/browsers/${agent.sessionId}/fs/write_file?${new URLSearchParams(query)}`;
  const put = async (query: Record<string, string>, body: string | Buffer, headers: Record<string, string> = {}, agent?: Agent): Promise<Reply> => {
    const res = await fetch(url(query, agent), {
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
  function startUpload(query: Record<string, string>, agent?: Agent) {
    let resolveReply!: (reply: Reply) => void;
    let rejectReply!: (err: Error) => void;
    const reply = new Promise<Reply>((resolve, reject) => {
      resolveReply = resolve;
      rejectReply = reject;
    });
    const req = http.request(url(query, agent), {
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

  /**
   * A hand-written request on a raw socket: the head (with the given Content-Length) and `sent`,
   * then nothing more. Collects the reply until the agent closes the connection.
   */
  function rawUpload(query: Record<string, string>, contentLength: number, sent: Buffer, agent: Agent = rig.agent) {
    const { hostname, port } = new URL(agent.url);
    const socket = net.connect(Number(port), hostname);
    let received = '';
    let closed = false;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => (closed = true));
    // A reset after the reply is the agent dropping the rest of the body: not a test failure.
    socket.on('error', () => undefined);
    socket.write(
      `PUT /browsers/${agent.sessionId}/fs/write_file?${new URLSearchParams(query)} HTTP/1.1\r\n` +
        `Host: ${hostname}:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/octet-stream\r\n` +
        `Content-Length: ${contentLength}\r\n\r\n`,
    );
    socket.write(sent);
    return {
      socket,
      get closed() {
        return closed;
      },
      /** The reply as far as received: status, headers (lower-case names) and the JSON body. */
      reply(): Reply {
        const end = received.indexOf('\r\n\r\n');
        if (end === -1) throw new Error(`no complete reply head in ${JSON.stringify(received)}`);
        const [statusLine, ...lines] = received.slice(0, end).split('\r\n');
        const headers: http.IncomingHttpHeaders = {};
        for (const line of lines) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const body = received.slice(end + 4);
        return { status: Number(statusLine!.split(' ')[1]), headers, body: body === '' ? undefined : JSON.parse(body) };
      },
    };
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

  it('answers another content type with 415 bad_request', async () => {
    const file = path.join(dir, 'wrong-type.txt');
    const res = await put({ path: file }, 'x', { 'content-type': 'text/plain' });
    expect([res.status, res.body.code]).toEqual([415, 'bad_request']);
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

  describe('what the destination may be', () => {
    // Names a test may create in /dev when the refusal is missing; removed whatever happens.
    const devLeftovers = [`/dev/bta-test-${process.pid}`, `/dev/bta-test-link-${process.pid}`];
    afterAll(() => {
      for (const leftover of devLeftovers) rmSync(leftover, { force: true });
    });

    const expectRefusedPath = (res: Reply, status = 400, code = 'invalid_input') => {
      expect([res.status, res.body?.code, res.body?.details?.[0]?.field]).toEqual([status, code, 'path']);
      expect(typeof res.body.message).toBe('string');
      expect(res.headers['x-should-retry']).toBe('false');
    };

    it('refuses to replace a FIFO with 400 invalid_input and leaves the FIFO', async () => {
      const fifo = path.join(dir, 'a-fifo');
      execFileSync('mkfifo', [fifo]);
      expectRefusedPath(await put({ path: fifo }, 'x'));
      expect(lstatSync(fifo).isFIFO()).toBe(true);
      expect(tempFiles(dir)).toEqual([]);
    });

    it('refuses to replace a character device outside /dev and leaves the device', async () => {
      const device = path.join(dir, 'a-null-device');
      execFileSync('mknod', [device, 'c', '1', '3']);
      expectRefusedPath(await put({ path: device }, 'x'));
      expect(lstatSync(device).isCharacterDevice()).toBe(true);
    });

    it('refuses to replace a unix socket and leaves the socket', async () => {
      const socketPath = path.join(dir, 'a-socket');
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(socketPath, resolve));
      try {
        expectRefusedPath(await put({ path: socketPath }, 'x'));
        expect(lstatSync(socketPath).isSocket()).toBe(true);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('refuses /dev/null and leaves it a character device', async () => {
      expectRefusedPath(await put({ path: '/dev/null' }, 'x'));
      expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    });

    it('refuses a symlink to a FIFO and leaves both', async () => {
      const fifo = path.join(dir, 'linked-fifo');
      const link = path.join(dir, 'link-to-fifo');
      execFileSync('mkfifo', [fifo]);
      symlinkSync(fifo, link);
      expectRefusedPath(await put({ path: link }, 'x'));
      expect([lstatSync(link).isSymbolicLink(), lstatSync(fifo).isFIFO()]).toEqual([true, true]);
    });

    it('refuses a symlink that leads to /dev/null', async () => {
      const link = path.join(dir, 'link-to-dev-null');
      symlinkSync('/dev/null', link);
      expectRefusedPath(await put({ path: link }, 'x'));
      expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    });

    it.each(['/proc/self/comm', '/proc/bta-new-file', '/sys/kernel/bta-new-file', devLeftovers[0]!])(
      'refuses %s with 400 invalid_input, not 500',
      async (target) => {
        expectRefusedPath(await put({ path: target }, 'x'));
        if (target.startsWith('/dev/')) expect(existsSync(target)).toBe(false);
      },
    );

    it('refuses a new file under a symlinked directory that leads into /dev and creates nothing there', async () => {
      const link = path.join(dir, 'link-to-dev');
      symlinkSync('/dev', link);
      expectRefusedPath(await put({ path: path.join(link, path.basename(devLeftovers[1]!)) }, 'x'));
      expect(existsSync(devLeftovers[1]!)).toBe(false);
    });

    it('answers 400 invalid_input to a 5000-character name, not 500', async () => {
      expectRefusedPath(await put({ path: path.join(dir, 'n'.repeat(5000)) }, 'x'));
    });

    it('answers 400 invalid_input to a path longer than PATH_MAX made of short names', async () => {
      const long = path.join(dir, ...Array.from({ length: 20 }, () => 'd'.repeat(250)), 'file.txt');
      expectRefusedPath(await put({ path: long }, 'x'));
      expect(existsSync(path.join(dir, 'd'.repeat(250)))).toBe(false);
    });
  });

  describe('mode bits', () => {
    const BITS = [0o4000, 0o2000, 0o1000, 0o400, 0o200, 0o100, 0o040, 0o020, 0o010, 0o004, 0o002, 0o001];
    const octal = (m: number) => m.toString(8).padStart(4, '0');

    it.each(BITS.map(octal))('creates a file with mode %s exactly', async (m) => {
      const file = path.join(dir, `create-${m}`);
      expect((await put({ path: file, mode: m }, 'x')).status).toBe(201);
      expect(octal(mode(file))).toBe(m);
    });

    it.each(BITS.map(octal))('replaces a 0644 file with mode %s exactly', async (m) => {
      const file = path.join(dir, `replace-${m}`);
      writeFileSync(file, 'old', { mode: 0o644 });
      expect((await put({ path: file, mode: m }, 'new')).status).toBe(201);
      expect([readFileSync(file, 'utf8'), octal(mode(file))]).toEqual(['new', m]);
    });

    it.each(['4755', '2755', '6755', '1777', '7777'])('keeps mode %s on a file written twice', async (m) => {
      const file = path.join(dir, `twice-${m}`);
      expect((await put({ path: file, mode: m }, 'one')).status).toBe(201);
      expect((await put({ path: file, mode: m }, 'two')).status).toBe(201);
      expect([readFileSync(file, 'utf8'), octal(mode(file))]).toEqual(['two', m]);
    });

    it("keeps setuid and setgid when replacing another user's file, and keeps that owner", async () => {
      const file = path.join(dir, 'owned-by-nobody');
      writeFileSync(file, 'old', { mode: 0o644 });
      chownSync(file, 65534, 65534);
      expect((await put({ path: file, mode: '6750' }, 'new')).status).toBe(201);
      const info = statSync(file);
      expect([info.uid, info.gid, octal(info.mode & 0o7777)]).toEqual([65534, 65534, '6750']);
    });
  });

  it('answers a declared 10 GiB body with 413 and closes the connection instead of reading the body', async () => {
    const file = path.join(dir, 'ten-gib.bin');
    const upload = rawUpload({ path: file }, 10 * 1024 ** 3, Buffer.alloc(1024, 0x65));
    try {
      await waitFor(() => upload.closed, 'the agent to close the connection');
      const res = upload.reply();
      expect([res.status, res.body.code, res.headers.connection]).toEqual([413, 'payload_too_large', 'close']);
      expect(existsSync(file)).toBe(false);
    } finally {
      upload.socket.destroy();
    }
  });

  describe('with --fs-allow and --upload-idle-ms (a second agent attached to the same browser)', () => {
    const IDLE_MS = 500;
    let restricted: TestRig;
    let base: string;
    let allowed: string;
    /** The second allowed directory, listed in --fs-allow through a symlink. */
    let linkedReal: string;
    let linkedEntry: string;
    let outside: string;

    beforeAll(async () => {
      base = mkdtempSync(path.join(os.tmpdir(), 'bta-fs-allow-'));
      allowed = path.join(base, 'allowed');
      linkedReal = path.join(base, 'linked-real');
      linkedEntry = path.join(base, 'linked-entry');
      outside = path.join(base, 'outside');
      for (const d of [allowed, linkedReal, outside, path.join(base, 'allowed-sibling')]) mkdirSync(d);
      symlinkSync(linkedReal, linkedEntry);
      restricted = await startRig({ cdpUrl: rig.agent.browserWsUrl, fsAllow: [allowed, linkedEntry], uploadIdleMs: IDLE_MS });
    });
    afterAll(async () => {
      await restricted?.close();
      rmSync(base, { recursive: true, force: true });
    });

    const putTo = (file: string, body = 'x') => put({ path: file }, body, {}, restricted.agent);

    it('writes under an allowed directory, creating missing parents', async () => {
      const file = path.join(allowed, 'a', 'b', 'file.txt');
      expect((await putTo(file, 'inside')).status).toBe(201);
      expect(readFileSync(file, 'utf8')).toBe('inside');
    });

    it('answers 403 forbidden outside every allowed directory and creates nothing', async () => {
      const file = path.join(outside, 'file.txt');
      const res = await putTo(file);
      expect([res.status, res.body.code, res.body.details?.[0]?.field]).toEqual([403, 'forbidden', 'path']);
      expect(existsSync(file)).toBe(false);
    });

    it("refuses a sibling whose name starts with an allowed directory's name", async () => {
      const file = path.join(base, 'allowed-sibling', 'file.txt');
      expect((await putTo(file)).status).toBe(403);
      expect(existsSync(file)).toBe(false);
    });

    it('refuses a path that climbs out of an allowed directory with ..', async () => {
      expect((await putTo(`${allowed}/../outside/climbed.txt`)).status).toBe(403);
      expect(existsSync(path.join(outside, 'climbed.txt'))).toBe(false);
    });

    it('refuses a symlinked parent that leads outside, missing levels included', async () => {
      symlinkSync(outside, path.join(allowed, 'escape'));
      expect((await putTo(path.join(allowed, 'escape', 'file.txt'))).status).toBe(403);
      expect((await putTo(path.join(allowed, 'escape', 'new', 'deeper', 'file.txt'))).status).toBe(403);
      expect(readdirSync(outside)).toEqual([]);
    });

    it('refuses a symlink at the path to a file outside and leaves that file', async () => {
      const target = path.join(outside, 'keep.txt');
      writeFileSync(target, 'keep');
      const link = path.join(allowed, 'link-to-outside-file');
      symlinkSync(target, link);
      expect((await putTo(link, 'overwritten')).status).toBe(403);
      expect([readFileSync(target, 'utf8'), lstatSync(link).isSymbolicLink()]).toEqual(['keep', true]);
    });

    it('accepts an allowed directory listed through a symlink, by either path', async () => {
      expect((await putTo(path.join(linkedEntry, 'via-link.txt'))).status).toBe(201);
      expect((await putTo(path.join(linkedReal, 'via-real.txt'))).status).toBe(201);
      expect(readdirSync(linkedReal).sort()).toEqual(['via-link.txt', 'via-real.txt']);
    });

    it('answers /dev/null with 400 as without --fs-allow: the refused trees come first', async () => {
      const res = await put({ path: '/dev/null' }, 'x', {}, restricted.agent);
      expect(res.status).toBe(400);
      expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    });

    it('drops an upload that stalls mid-body after the idle timeout with 408, removing its temporary file', async () => {
      const file = path.join(allowed, 'stalled.txt');
      writeFileSync(file, 'old');
      const upload = rawUpload({ path: file }, 1000, Buffer.alloc(100, 0x66), restricted.agent);
      try {
        await waitFor(() => tempFiles(allowed).length === 1, 'the temporary file');
        await waitFor(() => upload.closed, 'the agent to end the stalled upload');
        const res = upload.reply();
        expect([res.status, res.body.code, res.headers.connection]).toEqual([408, 'bad_request', 'close']);
        expect(tempFiles(allowed)).toEqual([]);
        expect(readFileSync(file, 'utf8')).toBe('old');
      } finally {
        upload.socket.destroy();
      }
    });

    it('does not cut an upload that keeps sending, however long it takes in total', async () => {
      const file = path.join(allowed, 'slow.txt');
      const upload = startUpload({ path: file }, restricted.agent);
      // Ten chunks, each well within the idle timeout of the one before: 2.5 idle timeouts in all.
      for (let i = 0; i < 10; i++) {
        await upload.write(Buffer.from(`chunk ${i}\n`));
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS / 4));
      }
      upload.req.end();
      expect((await upload.reply).status).toBe(201);
      expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(11);
    });
  });
});
