import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { startRig, type Tab, type TestRig } from './support/harness.ts';

/** Answers after `ms` (unless the client went away first). */
function delayed(ms: number, type: string, body: string) {
  return (_req: http.IncomingMessage, res: http.ServerResponse) => {
    const timer = setTimeout(() => res.writeHead(200, { 'content-type': type }).end(body), ms);
    res.on('close', () => clearTimeout(timer));
  };
}

describe('network_idle', () => {
  let rig: TestRig;
  let tab: Tab;

  beforeAll(async () => {
    rig = await startRig();
    const s = rig.server;
    // The HTML arrives in 5 pieces over 2 s.
    s.handle('/trickle.html', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.write('<!doctype html><title>trickle</title><p>0');
      let piece = 0;
      const timer = setInterval(() => {
        piece++;
        if (piece < 4) res.write(`<p>${piece}`);
        else {
          clearInterval(timer);
          res.end('<p>end');
        }
      }, 500);
      res.on('close', () => clearInterval(timer));
    });
    s.route('/event-source.html', `<!doctype html><script>new EventSource('/events')</script>`);
    s.handle('/events', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('data: hello\n\n');
    });
    s.route(
      '/late-xhr.html',
      `<!doctype html><script>
addEventListener('load', () => setTimeout(() => { const x = new XMLHttpRequest(); x.open('GET', '/late.json'); x.send(); }, 3000));
</script>`,
    );
    s.route('/late.json', '{"late":true}', 'application/json');
    s.route('/slow-oopif.html', `<!doctype html><iframe src="${s.crossSiteUrl('/slow-frame.html')}"></iframe>`);
    s.route('/slow-frame.html', `<!doctype html><script>fetch('/slow-in-frame.json')</script>`);
    s.handle('/slow-in-frame.json', delayed(1500, 'application/json', '{"slow":true}'));
    tab = await rig.driver.newTab();
    await tab.ready(rig.stream);
  });
  afterAll(() => rig?.close());

  /** Navigate the tab and return the nav_seq of the new document. */
  async function visit(path: string): Promise<number> {
    const before = navigations();
    await tab.navigate(rig.server.url(path));
    await rig.stream.waitFor(() => navigations() > before, `navigation to ${path}`);
    return navigations();
  }
  const navigations = () => rig.stream.ofType('page_navigation').filter((e) => e.data!.frame_id === tab.targetId).length;
  const idlesOf = (navSeq: number) => rig.stream.ofType('network_idle').filter((e) => e.data!.target_id === tab.targetId && e.data!.nav_seq === navSeq);
  const waitForIdle = (navSeq: number, count = 1, timeoutMs?: number) =>
    rig.stream.waitFor(() => idlesOf(navSeq).length >= count, `network_idle #${count} of nav_seq ${navSeq}`, timeoutMs);
  const seqOf = (event: TelemetryEvent) => rig.stream.envelopes.find((e) => e.event === event)!.seq;
  const lastNavigation = () =>
    rig.stream
      .ofType('page_navigation')
      .filter((e) => e.data!.frame_id === tab.targetId)
      .at(-1)!;
  const responseOf = (url: string) => rig.stream.ofType('network_response').find((e) => e.data!.url === url)!;

  it('fires only after the trickled HTML finished, then 500 ms of quiet', async () => {
    const navSeq = await visit('/trickle.html');
    await waitForIdle(navSeq);
    const idle = idlesOf(navSeq)[0]!;
    const document = responseOf(rig.server.url('/trickle.html'));
    expect(document.data!.body).toContain('<p>end');
    expect(seqOf(idle)).toBeGreaterThan(seqOf(document));
    expect(idle.ts - document.ts).toBeGreaterThanOrEqual(490_000);
    // The navigation committed with the first piece, ~2 s before the HTML was in.
    const navigation = lastNavigation();
    expect(document.ts - navigation.ts).toBeGreaterThan(1_500_000);
  });

  it('gives network_idle the context of the tab and its new document', () => {
    const navSeq = navigations();
    const idle = idlesOf(navSeq)[0]!;
    const navigation = lastNavigation();
    expect(idle.data).toEqual({
      session_id: navigation.data!.session_id,
      target_id: tab.targetId,
      target_type: 'page',
      frame_id: tab.targetId,
      loader_id: navigation.data!.loader_id,
      url: rig.server.url('/trickle.html'),
      nav_seq: navSeq,
    });
    expect(idle.source).toEqual({ kind: 'agent' });
  });

  it('reaches network_idle on a page that keeps an EventSource open', async () => {
    const navSeq = await visit('/event-source.html');
    await waitForIdle(navSeq);
    expect(rig.stream.ofType('network_request').some((e) => e.data!.url === rig.server.url('/events') && e.data!.resource_type === 'EventSource')).toBe(true);
  });

  it('fires a second network_idle after an XHR sent 3 s after load, and no other', async () => {
    const navSeq = await visit('/late-xhr.html');
    await waitForIdle(navSeq);
    await waitForIdle(navSeq, 2, 10_000);
    const [first, second] = idlesOf(navSeq);
    const xhr = responseOf(rig.server.url('/late.json'));
    expect(seqOf(first!)).toBeLessThan(seqOf(xhr));
    expect(seqOf(second!)).toBeGreaterThan(seqOf(xhr));
    expect(second!.ts - xhr.ts).toBeGreaterThanOrEqual(490_000);
    await visit('/event-source.html');
    expect(idlesOf(navSeq)).toHaveLength(2);
  });

  it('waits for a slow request of an out-of-process iframe', async () => {
    const navSeq = await visit('/slow-oopif.html');
    await waitForIdle(navSeq);
    const slow = responseOf(rig.server.crossSiteUrl('/slow-in-frame.json'));
    expect(slow.data!.target_type).toBe('iframe');
    const idle = idlesOf(navSeq)[0]!;
    expect(seqOf(idle)).toBeGreaterThan(seqOf(slow));
    expect(idle.ts - slow.ts).toBeGreaterThanOrEqual(490_000);
  });
});
