// The telemetry stream end to end (README.md#api-5): wire format, headers, start positions, retention,
// errors before the stream, keepalives, backpressure and the end of the stream.

import net from 'node:net';
import { CONFIG_CATEGORIES, defaultTelemetryConfig } from '../../src/telemetry/telemetry-config.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleText, SseClient, startRig, TOKEN, until, type Tab, type TestRig } from './support/harness.ts';
import { KEEPALIVE_COMMENT, KEEPALIVE_FRAME } from '../../src/stream/sse-frame.ts';

const LIMITED_TOKEN = 't-limited';

/** Makes the tab log `count` lines `<prefix>0 .. <prefix>{count-1}`, each with `padding` extra chars. */
async function logLines(tab: Tab, prefix: string, count: number, padding = 0): Promise<void> {
  const extra = padding > 0 ? `, 'x'.repeat(${padding})` : '';
  await tab.evaluate(`for (let i = 0; i < ${count}; i++) console.log(${JSON.stringify(prefix)} + i${extra})`);
}

function hasLine(client: SseClient, text: string): boolean {
  return client.ofType('console_log').some((e) => consoleText(e) === text);
}

async function waitForLine(client: SseClient, text: string, timeoutMs?: number): Promise<void> {
  await client.waitFor((c) => hasLine(c, text), `console line ${text}`, timeoutMs);
}

/** The seq of the console line `text` as seen by `client`. */
function seqOfLine(client: SseClient, text: string): number {
  const envelope = client.envelopes.find((e) => e.event.type === 'console_log' && consoleText(e.event) === text);
  if (!envelope) throw new Error(`no console line ${text}`);
  return envelope.seq;
}

/** [from, from+1, ..., to] */
function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface BrowserObjectResponse {
  status: number;
  body: Record<string, unknown>;
}

async function getBrowser(rig: TestRig, token = TOKEN): Promise<BrowserObjectResponse> {
  const response = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function latestSeq(rig: TestRig): Promise<number> {
  return (await getBrowser(rig)).body.seq as number;
}

/** Polls GET /browsers/{id} until the log's latest seq reaches `seq` (for when no client reads). */
async function waitUntilLatest(rig: TestRig, seq: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let latest = await latestSeq(rig);
  while (latest < seq) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for seq ${seq}; latest is ${latest}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    latest = await latestSeq(rig);
  }
}

/** Tracks the clients a describe block opens, to close them all at the end. */
class Clients {
  private readonly open: SseClient[] = [];

  /** `token: null` sends no Authorization header. */
  async connect(url: string, token: string | null = TOKEN, headers: Record<string, string> = {}): Promise<SseClient> {
    const client = await withTimeout(SseClient.open(url, token ?? undefined, headers), 5_000, `response headers of ${url}`);
    this.open.push(client);
    return client;
  }

  /** Opens a request expected to fail and waits for its whole error body. */
  async reject(url: string, token: string | null = TOKEN, headers: Record<string, string> = {}): Promise<SseClient> {
    const client = await this.connect(url, token, headers);
    await client.waitForEnd(5_000);
    return client;
  }

  closeAll(): void {
    for (const client of this.open.splice(0)) client.close();
  }
}

describe('the telemetry stream', () => {
  let rig: TestRig;
  let tab: Tab;
  const clients = new Clients();

  beforeAll(async () => {
    rig = await startRig({ tokens: [{ token: LIMITED_TOKEN, scopes: ['computer'] }] });
    tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    await logLines(tab, 'first-', 20);
    await waitForLine(rig.stream, 'first-19');
  });
  afterAll(async () => {
    clients.closeAll();
    await rig?.close();
  });

  describe('wire format', () => {
    it('writes every frame as exactly "id: <seq>\\ndata: <json>\\n\\n" with nothing else', () => {
      const complete = rig.stream.raw.slice(0, rig.stream.raw.lastIndexOf('\n\n') + 2);
      const frames = complete.split('\n\n').slice(0, -1);
      expect(frames.length).toBeGreaterThan(20);
      for (const frame of frames) {
        if (frame === KEEPALIVE_COMMENT) continue;
        expect(frame).toMatch(/^id: [1-9]\d*\ndata: \{[^\n]*\}$/);
      }
    });

    it('never writes an event: field', () => {
      expect(rig.stream.raw).not.toMatch(/(^|\n)event:/);
    });

    it('uses LF line endings only', () => {
      expect(rig.stream.raw).not.toContain('\r');
    });

    it('sets the frame id to the envelope seq', () => {
      expect(rig.stream.problems).toEqual([]);
      expect(rig.stream.envelopes.map((e) => e.seq)).toEqual(rig.stream.frameIds);
    });

    it('sends envelopes with exactly the keys seq and event', () => {
      for (const envelope of rig.stream.envelopes) expect(Object.keys(envelope).sort()).toEqual(['event', 'seq']);
    });
  });

  describe('response headers', () => {
    it('sends the SSE headers', async () => {
      const client = await clients.connect(rig.streamUrl);
      expect(client.status).toBe(200);
      expect(client.headers['content-type']).toBe('text/event-stream');
      expect(client.headers['x-sse-content-type']).toBe('application/json');
      expect(client.headers['cache-control']).toBe('no-cache, no-transform');
      expect(client.headers['x-accel-buffering']).toBe('no');
    });

    it('sends the body as the bare frames, delimited by the connection (no chunked encoding)', async () => {
      const url = new URL(`${rig.streamUrl}?replay=all`);
      const socket = net.connect(Number(url.port), url.hostname);
      socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      try {
        await until(() => (received.match(/\n\n/g) ?? []).length >= 20, 'twenty frames on the raw socket');
      } finally {
        socket.destroy();
      }
      const headEnd = received.indexOf('\r\n\r\n');
      const head = received.slice(0, headEnd).toLowerCase().split('\r\n');
      expect(head[0]).toBe('http/1.1 200 ok');
      expect(head).toContain('connection: close');
      expect(head.some((h) => h.startsWith('transfer-encoding') || h.startsWith('content-length'))).toBe(false);
      const body = received.slice(headEnd + 4);
      expect(body).toMatch(/^id: 1\ndata: \{/);
      const complete = body.slice(0, body.lastIndexOf('\n\n') + 2);
      for (const frame of complete.split('\n\n').slice(0, -1)) expect(frame).toMatch(/^id: [1-9]\d*\ndata: \{[^\n]*\}$|^: keepalive$/);
    });

    it('flushes the headers at once when there is nothing to send', async () => {
      // The rig's keepalive is the default 15 s and the tab is idle: only a flush gets them out
      // (without it they would come with the first keepalive, after 15 s).
      const started = Date.now();
      const client = await clients.connect(rig.streamUrl);
      expect(client.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(client.raw).toBe('');
    });
  });

  describe('sequence numbers and start positions', () => {
    it('numbers events contiguously from 1', () => {
      const ids = rig.stream.frameIds;
      expect(ids).toEqual(range(1, ids.at(-1)!));
    });

    it('starts a connection without Last-Event-ID or replay at the next new event', async () => {
      const before = await latestSeq(rig);
      const client = await clients.connect(rig.streamUrl);
      const after = await latestSeq(rig);
      await logLines(tab, 'fresh-', 3);
      await waitForLine(client, 'fresh-2');
      expect(client.frameIds[0]).toBeGreaterThan(before);
      expect(client.frameIds[0]).toBeLessThanOrEqual(after + 1);
    });

    it('resumes after Last-Event-ID with exactly the events missed, no gap and no duplicate', async () => {
      const first = await clients.connect(rig.streamUrl);
      await logLines(tab, 'before-drop-', 5);
      await waitForLine(first, 'before-drop-4');
      const lastSeen = first.frameIds.at(-1)!;
      first.close();

      await logLines(tab, 'while-away-', 5);
      await waitForLine(rig.stream, 'while-away-4');
      const resumed = await clients.connect(rig.streamUrl, TOKEN, { 'Last-Event-ID': String(lastSeen) });
      await waitForLine(resumed, 'while-away-4');

      const missed = rig.stream.envelopes.filter((e) => e.seq > lastSeen && e.seq <= resumed.frameIds.at(-1)!);
      expect(resumed.frameIds[0]).toBe(lastSeen + 1);
      expect(resumed.envelopes).toEqual(missed);
    });

    it('replays from seq 1 with replay=all while everything is retained', async () => {
      const client = await clients.connect(`${rig.streamUrl}?replay=all`);
      await waitForLine(client, 'first-19');
      expect(client.frameIds[0]).toBe(1);
    });
  });

  describe('errors before the stream', () => {
    it.each(['abc', '-1', '1.5'])('answers 400 invalid_input to Last-Event-ID %j', async (value) => {
      const client = await clients.reject(rig.streamUrl, TOKEN, { 'Last-Event-ID': value });
      expect(client.status).toBe(400);
      expect(client.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(client.raw)).toMatchObject({ code: 'invalid_input', message: expect.any(String) });
    });

    it('answers 404 not_found for an unknown session id, with the error body and no stream byte', async () => {
      const client = await clients.reject(`${rig.agent.url}/browsers/no-such-session/telemetry`);
      expect(client.status).toBe(404);
      expect(client.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(client.raw)).toMatchObject({ code: 'not_found', message: expect.any(String) });
    });

    it('answers 401 with WWW-Authenticate: Bearer without a token', async () => {
      const client = await clients.reject(rig.streamUrl, null);
      expect(client.status).toBe(401);
      expect(client.headers['www-authenticate']).toBe('Bearer');
      expect(JSON.parse(client.raw)).toMatchObject({ code: 'unauthorized' });
    });

    it('answers 401 to an unknown token', async () => {
      const client = await clients.reject(rig.streamUrl, 'not-a-known-token');
      expect(client.status).toBe(401);
      expect(JSON.parse(client.raw)).toMatchObject({ code: 'unauthorized' });
    });

    it('answers 401 rather than 404 to an unauthenticated caller probing an unknown id', async () => {
      const client = await clients.reject(`${rig.agent.url}/browsers/no-such-session/telemetry`, null);
      expect(client.status).toBe(401);
    });

    it('answers 403 forbidden to a token without telemetry:read', async () => {
      const client = await clients.reject(rig.streamUrl, LIMITED_TOKEN);
      expect(client.status).toBe(403);
      expect(JSON.parse(client.raw)).toMatchObject({ code: 'forbidden', message: expect.any(String) });
    });
  });

  describe('paths', () => {
    it('serves the same stream at /telemetry/stream', async () => {
      const client = await clients.connect(`${rig.streamUrl}/stream`);
      await logLines(tab, 'alias-', 1);
      await waitForLine(client, 'alias-0');
      expect(client.status).toBe(200);
      expect(client.problems).toEqual([]);
    });

    it('resumes after Last-Event-ID on /telemetry/stream too', async () => {
      const lastSeen = seqOfLine(rig.stream, 'first-9');
      const client = await clients.connect(`${rig.streamUrl}/stream`, TOKEN, { 'Last-Event-ID': String(lastSeen) });
      await waitForLine(client, 'first-19');
      expect(client.frameIds[0]).toBe(lastSeen + 1);
    });
  });

  describe('GET /browsers/{id}', () => {
    it('returns the browser object with exactly its fields', async () => {
      const { status, body } = await getBrowser(rig);
      expect(status).toBe(200);
      expect(Object.keys(body).sort()).toEqual(['cdp_connected', 'cdp_ws_url', 'created_at', 'seq', 'session_id', 'telemetry']);
    });

    it('never exposes base_url or jwt', async () => {
      const { body } = await getBrowser(rig);
      expect(body).not.toHaveProperty('base_url');
      expect(body).not.toHaveProperty('jwt');
    });

    it('reports the session id, an ISO 8601 UTC creation time and a live CDP connection', async () => {
      const { body } = await getBrowser(rig);
      expect(body.session_id).toBe(rig.agent.sessionId);
      expect(body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      expect(Date.parse(body.created_at as string)).toBeLessThanOrEqual(Date.now());
      expect(body.cdp_connected).toBe(true);
    });

    it('shows the full telemetry config with every category explicit', async () => {
      const { body } = await getBrowser(rig);
      // Every category the official client names, the network one with its body policy.
      expect(body.telemetry).toEqual(defaultTelemetryConfig());
      expect(Object.keys((body.telemetry as { browser: object }).browser).sort()).toEqual([...CONFIG_CATEGORIES].sort());
    });

    it('reports the latest seq', async () => {
      await logLines(tab, 'latest-', 1);
      await waitForLine(rig.stream, 'latest-0');
      const { body } = await getBrowser(rig);
      expect(body.seq).toBe(rig.stream.frameIds.at(-1));
    });

    it('requires telemetry:read', async () => {
      const { status, body } = await getBrowser(rig, LIMITED_TOKEN);
      expect(status).toBe(403);
      expect(body.code).toBe('forbidden');
    });
  });
});

describe('the telemetry stream with a small retention window', () => {
  const RING = 50;
  let rig: TestRig;
  let tab: Tab;
  let latest: number;
  const clients = new Clients();

  beforeAll(async () => {
    rig = await startRig({ ringEvents: RING, keepaliveMs: 200, dataDir: 'none' });
    tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    await logLines(tab, 'fill-', 200);
    await waitForLine(rig.stream, 'fill-199');
    latest = await latestSeq(rig);
  });
  afterAll(async () => {
    clients.closeAll();
    await rig?.close();
  });

  const oldestRetained = () => latest - RING + 1;

  it('starts a Last-Event-ID older than the window at the oldest retained event', async () => {
    const client = await clients.connect(rig.streamUrl, TOKEN, { 'Last-Event-ID': '1' });
    await client.waitFor((c) => c.frameIds.at(-1) === latest, `seq ${latest}`);
    expect(client.frameIds).toEqual(range(oldestRetained(), latest));
  });

  it('starts a Last-Event-ID newer than the latest seq at the oldest retained event', async () => {
    const client = await clients.connect(rig.streamUrl, TOKEN, { 'Last-Event-ID': String(latest + 1000) });
    await client.waitFor((c) => c.frameIds.at(-1) === latest, `seq ${latest}`);
    expect(client.frameIds[0]).toBe(oldestRetained());
  });

  it('starts replay=all at the oldest retained event', async () => {
    const client = await clients.connect(`${rig.streamUrl}?replay=all`);
    await client.waitFor((c) => c.frameIds.at(-1) === latest, `seq ${latest}`);
    expect(client.frameIds[0]).toBe(oldestRetained());
  });

  it('sends keepalive comments, and nothing else, on an idle stream', async () => {
    const client = await clients.connect(rig.streamUrl);
    await client.waitFor((c) => c.keepalives >= 2, 'two keepalives', 5_000);
    expect(client.raw.split(KEEPALIVE_FRAME.toString()).every((rest) => rest === '')).toBe(true);
  });
});

describe('a stalled subscriber', () => {
  // Default retention keeps the whole flood, so a reading client can never be skipped, however
  // the test's event loop (shared with the agent) is scheduled: any gap would be the agent's doing.
  const LINES = 5000;
  // ~2.6 KB frames: 13 MB in all, more than the loopback socket buffers hold (~4 MB).
  const PADDING = 2000;
  let rig: TestRig;
  let healthy: SseClient;
  let stalled: SseClient;
  let floodSeqs: { first: number; last: number };
  let stalledFramesWhilePaused: number;
  let latestWhenResumed: number;
  const clients = new Clients();

  beforeAll(async () => {
    rig = await startRig();
    const tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    healthy = await clients.connect(rig.streamUrl);
    stalled = await clients.connect(rig.streamUrl);
    stalled.pause();
    await logLines(tab, 'flood-', LINES, PADDING);
    await waitForLine(healthy, `flood-${LINES - 1}`, 30_000);
    floodSeqs = { first: seqOfLine(healthy, 'flood-0'), last: seqOfLine(healthy, `flood-${LINES - 1}`) };
    stalledFramesWhilePaused = stalled.frameIds.length;
    latestWhenResumed = await latestSeq(rig);
    stalled.resume();
    await stalled.waitFor((c) => c.frameIds.at(-1) === latestWhenResumed, `stalled client at seq ${latestWhenResumed}`, 30_000);
  }, 60_000);
  afterAll(async () => {
    clients.closeAll();
    await rig?.close();
  });

  it('does not delay another subscriber: it receives every event while the first is stalled', () => {
    expect(stalledFramesWhilePaused).toBe(0);
    expect(floodSeqs.last - floodSeqs.first).toBe(LINES - 1);
    expect(healthy.frameIds).toEqual(range(healthy.frameIds[0]!, latestWhenResumed));
  });

  it('continues where it stopped once it reads again', () => {
    expect(stalled.frameIds).toEqual(range(stalled.frameIds[0]!, latestWhenResumed));
  });
});

describe('a stalled subscriber whose position leaves the log', () => {
  const RING = 500;
  const LINES = 5000;
  const PADDING = 2000;
  let rig: TestRig;
  let stalled: SseClient;
  let firstFloodSeq: number;
  let latestWhenResumed: number;
  const clients = new Clients();

  beforeAll(async () => {
    rig = await startRig({ ringEvents: RING, dataDir: 'none' });
    const tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    // The rig's own replay client would only compete for the test's event loop.
    rig.stream.close();
    stalled = await clients.connect(rig.streamUrl);
    stalled.pause();
    firstFloodSeq = (await latestSeq(rig)) + 1;
    await logLines(tab, 'flood-', LINES, PADDING);
    await waitUntilLatest(rig, firstFloodSeq + LINES - 1);
    latestWhenResumed = await latestSeq(rig);
    stalled.resume();
    await stalled.waitFor((c) => c.frameIds.at(-1) === latestWhenResumed, `stalled client at seq ${latestWhenResumed}`, 30_000);
  }, 60_000);
  afterAll(async () => {
    clients.closeAll();
    await rig?.close();
  });

  it('continues with strictly increasing seqs up to the latest', () => {
    const ids = stalled.frameIds;
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
    expect(ids.at(-1)).toBe(latestWhenResumed);
  });

  it('skips, visibly, what left the log instead of holding it for the client', () => {
    // Had the agent queued frames for the stalled client beyond backpressure, the client would
    // now receive every one of them. It gets what the socket buffers held, then a gap.
    const ids = stalled.frameIds.filter((id) => id >= firstFloodSeq);
    expect(ids.length).toBeLessThan(LINES);
    expect(ids.some((id, i) => i > 0 && id !== ids[i - 1]! + 1)).toBe(true);
  });
});

describe('the end of the stream', () => {
  const LINES = 3000;
  const PADDING = 2000;
  let rig: TestRig;
  let tab: Tab;
  let client: SseClient;
  let latestAtClose: number;
  const clients = new Clients();

  beforeAll(async () => {
    rig = await startRig();
    tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    client = await clients.connect(rig.streamUrl);
    // Paused, so that frames are still waiting in the agent when it closes.
    client.pause();
    await logLines(tab, 'last-words-', LINES, PADDING);
    await waitForLine(rig.stream, `last-words-${LINES - 1}`, 30_000);
    latestAtClose = await latestSeq(rig);
    const closing = rig.agent.close();
    client.resume();
    await client.waitForEnd(10_000);
    await closing;
  }, 60_000);
  afterAll(async () => {
    clients.closeAll();
    await rig?.close();
  });

  it('delivers every event admitted before close, then ends the response cleanly', () => {
    expect(client.ended).toBe(true);
    expect(client.frameIds.at(-1)).toBe(latestAtClose);
  });

  it('delivers them without a gap', () => {
    expect(client.frameIds).toEqual(range(client.frameIds[0]!, latestAtClose));
    expect(hasLine(client, 'last-words-0')).toBe(true);
  });

  it('ends on a frame boundary', () => {
    expect(client.raw.endsWith('\n\n')).toBe(true);
    expect(client.problems).toEqual([]);
  });
});
