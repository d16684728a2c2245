import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventType, NetworkRequestData, NetworkResponseData, TelemetryEvent } from '../../injected/schema.ts';
import { consoleText, startRig, TOKEN, type Tab, type TestRig } from './support/harness.ts';

const MiB = 1024 * 1024;
/** A 1×1 transparent PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
const BIG_JSON = `{"data":"${'a'.repeat(2 * MiB)}"}`;
const HUGE_TEXT = 'y'.repeat(20 * MiB);

/** A port nothing listens on: connections to it are refused. */
async function closedPort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

function page(refusedUrl: string): string {
  const links = Array.from({ length: 10 }, (_, i) => `<link rel="stylesheet" href="/sub/${i}.css">`).join('');
  const images = Array.from({ length: 10 }, (_, i) => `<img src="/sub/${i}.png">`).join('');
  return `<!doctype html><title>network</title>${links}${images}<script>
addEventListener('load', async () => {
  await fetch('/r302');
  await fetch('/echo-json', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hello: 'world' }) });
  await fetch('/echo-blob', { method: 'POST', body: new Blob(['blob-payload-🙂']) });
  const abort = new AbortController();
  const aborted = fetch('/slow', { signal: abort.signal }).catch(() => {});
  setTimeout(() => abort.abort(), 50);
  await aborted;
  await fetch(${JSON.stringify(refusedUrl)}).catch(() => {});
  await fetch('/missing.json');
  await (await fetch('/big.json')).text();
  await (await fetch('/huge.txt')).text();
  await fetch('/after-huge.json');
  console.log('network-scenario-done');
});
</script>`;
}

/** docs/events.md#types + §6.2: the only keys each event's data may have. */
const CONTEXT_KEYS = ['session_id', 'target_id', 'target_type', 'frame_id', 'loader_id', 'url', 'nav_seq'];
/** The transfer extension fields (docs/export.md "HAR"). */
const TRANSFER_KEYS = ['remote_ip_address', 'remote_port', 'protocol', 'connection_id', 'from_disk_cache', 'from_service_worker', 'timing'];
const REQUEST_KEYS = [
  ...CONTEXT_KEYS,
  'request_id',
  'method',
  'document_url',
  'headers',
  'resource_type',
  'initiator_type',
  'initiator_url',
  'post_data',
  'is_redirect',
  'redirect_url',
  'redirect_response',
];
const RESPONSE_KEYS = [
  ...CONTEXT_KEYS,
  'request_id',
  'method',
  'status',
  'status_text',
  'headers',
  'mime_type',
  'resource_type',
  'body',
  'body_encoding',
  ...TRANSFER_KEYS,
  'encoded_data_length',
  'data_length',
];
const FAILED_KEYS = [...CONTEXT_KEYS, 'request_id', 'error_text', 'canceled', 'resource_type'];

describe('network telemetry', () => {
  let rig: TestRig;
  let tab: Tab;
  let pageUrl: string;
  let refusedUrl: string;

  beforeAll(async () => {
    // The 2 MB JSON is fetched (and cut to the 64 KiB body cap) only under a fetch limit above
    // it; the default 1 MiB would skip it for size like the 20 MB text.
    rig = await startRig({ limits: { maxBodyFetchBytes: 4 * MiB } });
    const s = rig.server;
    refusedUrl = `http://127.0.0.1:${await closedPort()}/refused`;
    pageUrl = s.route('/network.html', page(refusedUrl));
    for (let i = 0; i < 10; i++) {
      s.route(`/sub/${i}.css`, `.c${i} { color: red }`, 'text/css');
      s.handle(`/sub/${i}.png`, (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG));
    }
    s.handle('/r302', (_req, res) => res.writeHead(302, { location: '/r301' }).end());
    s.handle('/r301', (_req, res) => res.writeHead(301, { location: '/final.json' }).end());
    s.route('/final.json', '{"final":true}', 'application/json');
    for (const path of ['/echo-json', '/echo-blob']) {
      s.handle(path, (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: Buffer.concat(chunks).toString() })));
      });
    }
    s.handle('/slow', (_req, res) => {
      const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 5000);
      res.on('close', () => clearTimeout(timer));
    });
    s.handle('/missing.json', (_req, res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}'));
    s.route('/big.json', BIG_JSON, 'application/json');
    s.route('/huge.txt', HUGE_TEXT, 'text/plain');
    s.route('/after-huge.json', '{"after":"huge"}', 'application/json');
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'network-scenario-done', 20_000);
    await rig.stream.waitForEvent('network_response', (e) => e.data!.url === s.url('/after-huge.json'));
  });
  afterAll(() => rig?.close());

  const url = (path: string) => rig.server.url(path);
  const ofType = <T extends EventType>(type: T) => rig.stream.ofType(type).filter((e) => (e.data as { target_id?: string }).target_id === tab.targetId);
  const requestsTo = (path: string) => ofType('network_request').filter((e) => e.data!.url === url(path));
  const responseOf = (path: string) => ofType('network_response').find((e) => e.data!.url === url(path));
  const failureOf = (requestId: string) => ofType('network_loading_failed').find((e) => e.data!.request_id === requestId);
  const documentRequest = () => requestsTo('/network.html')[0]!;
  const expectOnlyKeys = (data: object, allowed: string[]) => expect(Object.keys(data).filter((k) => !allowed.includes(k))).toEqual([]);

  it('reports each of the 20 subresources with one request and one response', () => {
    for (let i = 0; i < 10; i++) {
      for (const path of [`/sub/${i}.css`, `/sub/${i}.png`]) {
        expect(requestsTo(path), path).toHaveLength(1);
        expect(
          ofType('network_response').filter((e) => e.data!.url === url(path)),
          path,
        ).toHaveLength(1);
      }
    }
  });

  it('gives network_request exactly its fields, with the context taken at request time', () => {
    const css = requestsTo('/sub/0.css')[0]!;
    const doc = documentRequest().data!;
    expectOnlyKeys(css.data!, REQUEST_KEYS);
    expect(css.data).toMatchObject({
      session_id: expect.any(String),
      target_id: tab.targetId,
      target_type: 'page',
      frame_id: tab.targetId,
      loader_id: doc.request_id,
      url: url('/sub/0.css'),
      nav_seq: 1,
      request_id: expect.any(String),
      method: 'GET',
      document_url: pageUrl,
      resource_type: 'Stylesheet',
      initiator_type: 'parser',
      initiator_url: pageUrl,
    });
    expect(css.data!.headers).toMatchObject({ 'User-Agent': expect.stringContaining('Chrome') });
    expect(css.data).not.toHaveProperty('post_data');
    expect(css.data).not.toHaveProperty('is_redirect');
  });

  it("reports the main document's request before its navigation committed (nav_seq 0) with the new loader", () => {
    const doc = documentRequest().data!;
    expect(doc).toMatchObject({ resource_type: 'Document', initiator_type: 'other', nav_seq: 0, loader_id: doc.request_id });
  });

  it("gives the main document's network_response with its HTML body", () => {
    const response = responseOf('/network.html')!;
    expectOnlyKeys(response.data!, RESPONSE_KEYS);
    expect(response.data).toMatchObject({ status: 200, status_text: 'OK', mime_type: 'text/html', resource_type: 'Document', method: 'GET' });
    expect(response.data!.body).toBe(page(refusedUrl));
    expect(response.truncated).toBeUndefined();
  });

  it('names the CDP method and the target in source', () => {
    const request = requestsTo('/sub/0.css')[0]!;
    const response = responseOf('/sub/0.css')!;
    expect(request.source).toEqual({
      kind: 'cdp',
      event: 'Network.requestWillBeSent',
      metadata: { cdp_session_id: request.data!.session_id, target_id: tab.targetId, target_type: 'page' },
    });
    expect(response.source.event).toBe('Network.loadingFinished');
  });

  it('stamps request and response with Unix microseconds from the browser clock, response after request', () => {
    const request = requestsTo('/sub/0.css')[0]!;
    const response = responseOf('/sub/0.css')!;
    expect(Math.abs(request.ts - Date.now() * 1000)).toBeLessThan(60_000_000);
    expect(response.ts).toBeGreaterThanOrEqual(request.ts);
  });

  it('reports a 302→301→200 chain as three hops of one request, each redirect with the URL it came from', () => {
    const hops = ofType('network_request').filter((e) => ['/r302', '/r301', '/final.json'].some((p) => e.data!.url === url(p)));
    expect(hops.map((e) => e.data!.url)).toEqual([url('/r302'), url('/r301'), url('/final.json')]);
    expect(new Set(hops.map((e) => e.data!.request_id)).size).toBe(1);
    expect(hops.map((e) => [e.data!.is_redirect, e.data!.redirect_url])).toEqual([
      [undefined, undefined],
      [true, url('/r302')],
      [true, url('/r301')],
    ]);
  });

  it('gives a redirect chain one network_response, of the final hop', () => {
    const requestId = requestsTo('/r302')[0]!.data!.request_id;
    const responses = ofType('network_response').filter((e) => e.data!.request_id === requestId);
    expect(responses.map((e) => [e.data!.url, e.data!.status, e.data!.body])).toEqual([[url('/final.json'), 200, '{"final":true}']]);
  });

  it('reports a POST with JSON with its post_data and the echoed response body', () => {
    const request = requestsTo('/echo-json')[0]!.data!;
    expect(request).toMatchObject({ method: 'POST', post_data: '{"hello":"world"}', resource_type: 'Fetch', initiator_type: 'script' });
    expect(request.headers['content-type']).toBe('application/json');
    expect(responseOf('/echo-json')!.data).toMatchObject({ method: 'POST', status: 200, body: '{"echo":"{\\"hello\\":\\"world\\"}"}' });
  });

  it('reports a POST with a Blob body with its post_data (fetched from Chromium)', () => {
    expect(requestsTo('/echo-blob')[0]!.data!.post_data).toBe('blob-payload-🙂');
  });

  it('reports an aborted fetch as network_loading_failed net::ERR_ABORTED, canceled', () => {
    const request = requestsTo('/slow')[0]!.data!;
    const failure = failureOf(request.request_id)!;
    expectOnlyKeys(failure.data!, FAILED_KEYS);
    expect(failure.data).toEqual({
      session_id: request.session_id,
      target_id: tab.targetId,
      target_type: 'page',
      frame_id: tab.targetId,
      loader_id: request.loader_id,
      url: url('/slow'),
      nav_seq: 1,
      request_id: request.request_id,
      error_text: 'net::ERR_ABORTED',
      canceled: true,
      resource_type: 'Fetch',
    });
    expect(failure.source.event).toBe('Network.loadingFailed');
    expect(responseOf('/slow')).toBeUndefined();
  });

  it('reports a refused connection as network_loading_failed, not canceled', () => {
    const request = ofType('network_request').find((e) => e.data!.url === refusedUrl)!;
    expect(failureOf(request.data!.request_id)!.data).toMatchObject({ error_text: 'net::ERR_CONNECTION_REFUSED', canceled: false, url: refusedUrl });
  });

  it('reports a 404 as a network_response with its status and body, not a failure', () => {
    const response = responseOf('/missing.json')!;
    expect(response.data).toMatchObject({ status: 404, status_text: 'Not Found', body: '{"error":"not found"}' });
    expect(failureOf(response.data!.request_id)).toBeUndefined();
  });

  it('cuts a 2 MB JSON body to the 64 KiB cap and marks the response truncated', () => {
    const response = responseOf('/big.json')!;
    expect(response.data!.body).toBe(BIG_JSON.slice(0, 64 * 1024));
    expect(response.truncated).toBe(true);
  });

  it('gives a 20 MB text response no body and marks it truncated', () => {
    const response = responseOf('/huge.txt')!;
    expect(response.data).toMatchObject({ status: 200, mime_type: 'text/plain' });
    expect(response.data).not.toHaveProperty('body');
    expect(response.truncated).toBe(true);
  });

  it('keeps the CDP connection healthy after the 20 MB response', async () => {
    expect(responseOf('/after-huge.json')!.data!.body).toBe('{"after":"huge"}');
    const res = await fetch(`${rig.agent.url}/browsers/${rig.agent.sessionId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(((await res.json()) as { cdp_connected: boolean }).cdp_connected).toBe(true);
  });

  it('gives an image response no body and no truncated mark', () => {
    const response = responseOf('/sub/0.png')!;
    expect(response.data).toMatchObject({ status: 200, mime_type: 'image/png', resource_type: 'Image' });
    expect(response.data).not.toHaveProperty('body');
    expect(response.truncated).toBeUndefined();
  });

  it('leaves stylesheet bodies out by default (the body policy)', () => {
    const css = responseOf('/sub/3.css')!;
    expect(css.data).toMatchObject({ mime_type: 'text/css', resource_type: 'Stylesheet' });
    expect(css.data).not.toHaveProperty('body');
    expect(css.truncated).toBeUndefined();
  });

  it('orders every response after its request', () => {
    const responses: Array<TelemetryEvent<'network_response'>> = ofType('network_response');
    const seqOf = (event: TelemetryEvent) => rig.stream.envelopes.find((e) => e.event === event)!.seq;
    for (const response of responses) {
      const requests = ofType('network_request').filter((e) => (e.data as NetworkRequestData).request_id === (response.data as NetworkResponseData).request_id);
      expect(requests.length).toBeGreaterThan(0);
      expect(seqOf(requests.at(-1)!)).toBeLessThan(seqOf(response));
    }
  });
});

describe('network bodies of a page that navigates on at its load event', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig({ screenshots: false });
    const s = rig.server;
    // Bodies are fetched once the tab has loaded and gone quiet; this page leaves at once, so its
    // bodies are asked for after the next document committed: they come from the browser's
    // durable copy (docs/network.md "When bodies are fetched").
    s.route(
      '/leaving.html',
      `<!doctype html><title>leaving</title><script>
const during = fetch('/during-load.json').then((r) => r.text());
addEventListener('load', () => during.then(() => location.replace('/next.html')));
</script><p>leaving</p>`,
    );
    s.route('/during-load.json', '{"during":"load"}', 'application/json');
    s.route('/next.html', '<!doctype html><title>next</title><p>next</p>');
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(s.url('/leaving.html'));
    await rig.stream.waitForEvent('network_response', (e) => e.data!.url === s.url('/next.html'));
  });
  afterAll(() => rig?.close());

  const responseOf = async (path: string) => (await rig.stream.waitForEvent('network_response', (e) => e.data!.url === rig.server.url(path))).data!;

  it('still reports the HTML of the page it left with its body', async () => {
    expect((await responseOf('/leaving.html')).body).toContain('<p>leaving</p>');
  });

  it('still reports the fetch made during its load with its body', async () => {
    expect((await responseOf('/during-load.json')).body).toBe('{"during":"load"}');
  });
});
