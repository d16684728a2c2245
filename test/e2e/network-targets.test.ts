import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventType } from '../../injected/schema.ts';
import { consoleText, startRig, type Tab, type TestRig } from './support/harness.ts';

const JS = 'application/javascript';
const JSON_TYPE = 'application/json';

describe('network telemetry across targets', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig();
    const s = rig.server;
    s.route('/frames.html', `<!doctype html><iframe src="${s.crossSiteUrl('/inner.html')}"></iframe><script>new Worker('/worker.js')</script>`);
    s.route('/inner.html', `<!doctype html><p>inner</p><script>fetch('/from-iframe.json')</script>`);
    s.route('/from-iframe.json', '{"from":"iframe"}', JSON_TYPE);
    s.route('/worker.js', `fetch('/from-worker.json')`, JS);
    s.route('/from-worker.json', '{"from":"worker"}', JSON_TYPE);
    s.route('/shared.html', `<!doctype html><script>new SharedWorker('/shared-worker.js')</script>`);
    s.route('/shared-worker.js', `fetch('/from-shared.json')`, JS);
    s.route('/from-shared.json', '{"from":"shared"}', JSON_TYPE);
    s.route('/sw.html', `<!doctype html><script>navigator.serviceWorker.register('/sw.js')</script>`);
    s.route('/sw.js', `fetch('/from-service-worker.json')`, JS);
    s.route('/from-service-worker.json', '{"from":"service worker"}', JSON_TYPE);
    s.route('/a.html', '<!doctype html><title>A</title><p>a</p>');
    s.route('/b.html', '<!doctype html><title>B</title><p>b</p>');
    // HTML that never ends: the tab navigates on while it is still arriving.
    s.handle('/endless.html', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.write('<!doctype html><title>endless</title><p>still loading');
    });
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(s.url('/frames.html'));
  });
  afterAll(() => rig?.close());

  const navSeq = () => rig.stream.ofType('page_navigation').filter((e) => e.data!.frame_id === tab.targetId).length;
  const waitFor = <T extends EventType>(type: T, url: string) => rig.stream.waitForEvent(type, (e) => (e.data as { url?: string }).url === url);

  it('reports the requests of an out-of-process iframe with target type iframe and the tab nav_seq', async () => {
    const request = await waitFor('network_request', rig.server.crossSiteUrl('/from-iframe.json'));
    const response = await waitFor('network_response', rig.server.crossSiteUrl('/from-iframe.json'));
    expect(request.data).toMatchObject({ target_type: 'iframe', nav_seq: navSeq(), initiator_type: 'script' });
    expect(request.data!.target_id).not.toBe(tab.targetId);
    expect(request.data!.frame_id).toBe(request.data!.target_id);
    expect(request.source.metadata!.target_type).toBe('iframe');
    expect(response.data).toMatchObject({ target_type: 'iframe', nav_seq: navSeq(), body: '{"from":"iframe"}' });
  });

  it("reports the iframe's document request, started on the page's session and finished on the iframe's, once with its body", async () => {
    const url = rig.server.crossSiteUrl('/inner.html');
    const response = await waitFor('network_response', url);
    const iframeRequest = await waitFor('network_request', rig.server.crossSiteUrl('/from-iframe.json'));
    expect(rig.stream.ofType('network_request').filter((e) => e.data!.url === url)).toHaveLength(1);
    expect(rig.stream.ofType('network_response').filter((e) => e.data!.url === url)).toHaveLength(1);
    expect(response.data).toMatchObject({ target_id: tab.targetId, target_type: 'page', frame_id: iframeRequest.data!.frame_id, resource_type: 'Document' });
    expect(response.data!.body).toContain('<p>inner</p>');
    expect(response.source.metadata!.target_type).toBe('iframe');
  });

  it("reports a dedicated worker's own fetch with target type worker and the tab nav_seq", async () => {
    const response = await waitFor('network_response', rig.server.url('/from-worker.json'));
    expect(response.data).toMatchObject({ target_type: 'worker', nav_seq: navSeq(), body: '{"from":"worker"}' });
    expect(response.data).not.toHaveProperty('frame_id');
    expect(response.data).not.toHaveProperty('loader_id');
  });

  it("reports a dedicated worker's script, fetched on the page's session, in the page's context", async () => {
    const response = await waitFor('network_response', rig.server.url('/worker.js'));
    expect(response.data).toMatchObject({ target_id: tab.targetId, resource_type: 'Script', mime_type: JS });
    // Scripts are not in the default body policy.
    expect(response.data).not.toHaveProperty('body');
  });

  it("reports a shared worker's fetch with target type shared_worker and no nav_seq", async () => {
    await tab.navigate(rig.server.url('/shared.html'));
    const response = await waitFor('network_response', rig.server.url('/from-shared.json'));
    expect(response.data).toMatchObject({ target_type: 'shared_worker', body: '{"from":"shared"}' });
    expect(response.data).not.toHaveProperty('nav_seq');
  });

  it("reports a service worker's fetch with target type service_worker and no nav_seq", async () => {
    await tab.navigate(rig.server.url('/sw.html'));
    const response = await waitFor('network_response', rig.server.url('/from-service-worker.json'));
    expect(response.data).toMatchObject({ target_type: 'service_worker', body: '{"from":"service worker"}' });
    expect(response.data).not.toHaveProperty('nav_seq');
  });

  /** Navigate and return the loader id of the committed document. */
  async function visit(url: string): Promise<string> {
    const before = navSeq();
    await tab.navigate(url);
    await rig.stream.waitFor(() => navSeq() > before, `navigation to ${url}`);
    return rig.stream
      .ofType('page_navigation')
      .filter((e) => e.data!.frame_id === tab.targetId)
      .at(-1)!.data!.loader_id;
  }
  const documentResponse = (loaderId: string) => rig.stream.waitForEvent('network_response', (e) => e.data!.request_id === loaderId);

  it("reports the main document's response, with its body, for every navigation (same-site and cross-site)", async () => {
    const urls = [rig.server.url('/a.html'), rig.server.url('/b.html'), rig.server.crossSiteUrl('/a.html'), rig.server.url('/a.html')];
    for (const url of urls) {
      const loaderId = await visit(url);
      const response = await documentResponse(loaderId);
      expect(response.data).toMatchObject({ url, resource_type: 'Document', status: 200, loader_id: loaderId, mime_type: 'text/html' });
      expect(response.data!.body).toMatch(/^<!doctype html><title>[AB]<\/title>/);
    }
  });

  it('still reports the response of a document the tab left before its HTML was complete, without a body', async () => {
    const loaderId = await visit(rig.server.url('/endless.html'));
    await visit(rig.server.url('/b.html'));
    const response = await documentResponse(loaderId);
    expect(response.data).toMatchObject({ url: rig.server.url('/endless.html'), status: 200, resource_type: 'Document' });
    expect(response.data).not.toHaveProperty('body');
    expect(response.source.event).toBe('Network.responseReceived');
  });
});

describe('network category off', () => {
  let rig: TestRig;

  beforeAll(async () => {
    rig = await startRig({ telemetry: { browser: { network: { enabled: false } } } });
    rig.server.route(
      '/fetches.html',
      `<!doctype html><img src="/i.png"><script>
fetch('/data.json').then((r) => r.text()).then(() => console.log('fetches-done'));
</script>`,
    );
    rig.server.route('/data.json', '{"a":1}', JSON_TYPE);
    const tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
    await tab.navigate(rig.server.url('/fetches.html'));
    await rig.stream.waitForEvent('console_log', (e) => consoleText(e) === 'fetches-done');
    await rig.stream.waitForEvent('page_load', (e) => e.data!.url === rig.server.url('/fetches.html'));
  });
  afterAll(() => rig?.close());

  it('produces no network events while the other categories go on', () => {
    expect(rig.stream.events.filter((e) => e.type.startsWith('network_'))).toEqual([]);
    expect(rig.stream.ofType('page_navigation').length).toBeGreaterThan(0);
  });
});
