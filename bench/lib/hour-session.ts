// A realistic hour of one automated browser session, as events (docs/mcp.md "Measured"): what the
// MCP tools' compactness is measured on. An automation visits a shop's pages every 20 s through
// the CDP proxy (an action each: navigate, clicks, typing), each page loads its document and
// about 30 subresources with real-sized headers and bodies, logs analytics noise, polls an API
// every 2 s, and things go wrong as they do: a recurring TypeError, errors whose text varies by
// an id, a flaky API origin (503s), a blocked third party, canceled images on navigation, a
// crash and its recovery, two hangs, a dialog, a download, a telemetry gap, a failed navigation,
// screenshots after loads. Deterministic (a seeded generator), so the figures repeat.

import type { EventDataByType, EventType, TelemetryEvent } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';

export interface HourSessionOptions {
  /** Seconds of session (3600: an hour). */
  seconds?: number;
  /** Unix ms of the first event. */
  startMs?: number;
  seed?: number;
}

const SHOP = 'https://shop.example.com';
const API = 'https://api.example.com';
const CDN = 'https://cdn.example-static.net';
const TRACKER = 'https://t.tracker-analytics.io';
const FONTS = 'https://fonts.example-fonts.com';
const TAB = 'C0FFEE00C0FFEE00C0FFEE00C0FFEE01';
const CONNECTION = 'conn-7f3a';
const PAGES = ['/', '/search?q=lamp', '/product/1842', '/product/2210', '/cart', '/checkout', '/account/orders', '/help/shipping'];

/** A PNG's size as base64 (a downscaled screenshot of a shop page: about 180 KB). */
const SCREENSHOT_B64_BYTES = 240_000;

function requestHeaders(url: string): Record<string, string> {
  return {
    accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8',
    'accept-encoding': 'gzip, deflate, br, zstd',
    'accept-language': 'en-US,en;q=0.9',
    'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/153.0.0.0 Safari/537.36',
    referer: `${SHOP}/`,
    'sec-ch-ua': '"Chromium";v="153", "Not)A;Brand";v="24"',
    'sec-ch-ua-mobile': '?0',
    'sec-ch-ua-platform': '"Linux"',
    'sec-fetch-dest': url.endsWith('.js') ? 'script' : 'empty',
    'sec-fetch-mode': 'cors',
    'sec-fetch-site': 'same-site',
    cookie: 'session=9f8e7d6c5b4a39281706f5e4d3c2b1a0; cart=3; ab=variant-b; _ga=GA1.2.1234567890.1700000000',
  };
}

function responseHeaders(mime: string, size: number): Record<string, string> {
  return {
    'content-type': mime,
    'content-length': String(size),
    'cache-control': 'public, max-age=31536000, immutable',
    date: 'Sat, 28 Nov 2026 10:00:00 GMT',
    etag: '"5f8a7c2e-1b3c"',
    server: 'envoy',
    'strict-transport-security': 'max-age=63072000; includeSubDomains; preload',
    'x-content-type-options': 'nosniff',
    'x-request-id': 'b3c1d2e4-5f60-4a7b-8c9d-0e1f2a3b4c5d',
    'content-security-policy': "default-src 'self'; script-src 'self' https://cdn.example-static.net https://t.tracker-analytics.io; img-src * data:",
    via: '1.1 varnish, 1.1 cloudfront',
    'x-cache': 'Hit from cloudfront',
  };
}

const TIMING = {
  request_time_offset: -0.4,
  proxy_start: -1,
  proxy_end: -1,
  dns_start: 0.1,
  dns_end: 2.4,
  connect_start: 2.4,
  connect_end: 31.2,
  ssl_start: 9.8,
  ssl_end: 31.1,
  worker_start: -1,
  worker_ready: -1,
  send_start: 31.5,
  send_end: 31.9,
  receive_headers_start: 88.2,
  receive_headers_end: 88.6,
};

/** The events of the session, in time order (as the agent admits them). */
export function hourSession(options: HourSessionOptions = {}): TelemetryEvent[] {
  const seconds = options.seconds ?? 3600;
  const start = (options.startMs ?? Date.UTC(2026, 10, 28, 10, 0, 0)) * 1000;
  let seed = options.seed ?? 42;
  const random = (): number => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const events: TelemetryEvent[] = [];
  let actionCounter = 0;
  let requestCounter = 1000;
  let navSeq = 0;
  let url = `${SHOP}/`;
  let window: string | undefined;
  const screenshot = 'iVBORw0KGgo'.padEnd(SCREENSHOT_B64_BYTES, 'A');

  const emit = (ts: number, type: EventType, data: Record<string, unknown>, source: TelemetryEvent['source'] = { kind: 'cdp' }, truncated = false): void => {
    const context =
      type.startsWith('cdp_') || type === 'api_call' || type === 'computer_action' || type.startsWith('monitor_')
        ? {}
        : { target_id: TAB, target_type: 'page', session_id: 'S-7A1F', frame_id: TAB, loader_id: `L-${navSeq}`, url, nav_seq: navSeq };
    const stamped = window !== undefined && !('action_id' in data) && !type.startsWith('monitor_') ? { caused_by: window } : {};
    // The generator builds every type's data from the same loose parts (the context, the window's
    // cause, the type's own fields), so its shape is asserted here, once, for the whole session.
    const shaped = { ...stamped, ...context, ...data } as EventDataByType[EventType];
    events.push(eventOf({ ts: Math.round(ts), type, source, data: shaped, ...(truncated && { truncated: true as const }) }));
  };
  const action = (ts: number, method: string, extra: Record<string, unknown> = {}, outcome: 'ok' | 'error' = 'ok', error?: string): string => {
    const id = `act-${(++actionCounter).toString(36).padStart(6, '0')}`;
    emit(
      ts,
      'cdp_command',
      {
        action_id: id,
        target_id: TAB,
        duration_ms: Math.round(5 + random() * 60),
        outcome,
        ...(error && { error }),
        method,
        connection_id: CONNECTION,
        session_id: 'S-7A1F',
        ...extra,
      },
      { kind: 'kernel_api', event: method },
    );
    return id;
  };
  const request = (
    ts: number,
    target: string,
    type: string,
    mime: string,
    size: number,
    outcome: { status?: number; error?: string; canceled?: boolean } = { status: 200 },
    body?: string,
  ): number => {
    const id = `${requestCounter++}.${navSeq}`;
    const requestUrl = url;
    url = target;
    emit(ts, 'network_request', {
      request_id: id,
      method: 'GET',
      document_url: requestUrl,
      headers: requestHeaders(target),
      resource_type: type,
      initiator_type: type === 'Document' ? 'other' : 'parser',
      ...(type !== 'Document' && { initiator_url: `${SHOP}${PAGES[0]}` }),
    });
    const done = ts + 20_000 + random() * 180_000;
    if (outcome.status !== undefined) {
      emit(done, 'network_response', {
        request_id: id,
        method: 'GET',
        status: outcome.status,
        status_text: outcome.status === 200 ? 'OK' : outcome.status === 404 ? 'Not Found' : 'Service Unavailable',
        headers: responseHeaders(mime, size),
        mime_type: mime,
        resource_type: type,
        remote_ip_address: '203.0.113.10',
        remote_port: 443,
        protocol: 'h2',
        connection_id: 77,
        timing: TIMING,
        encoded_data_length: size + 600,
        data_length: size,
        ...(body !== undefined && { body }),
      });
    } else {
      emit(done, 'network_loading_failed', { request_id: id, error_text: outcome.error, canceled: outcome.canceled === true, resource_type: type });
    }
    url = requestUrl;
    return done;
  };

  let t = start;
  const end = start + seconds * 1_000_000;
  let page = 0;
  let nextPoll = start;
  const errorIds = [4411, 4412, 4413];
  while (t < end) {
    // A page: the automation navigates (every sixth one to a host that does not resolve).
    const path = PAGES[page % PAGES.length]!;
    const failing = page % 37 === 36;
    window = action(t, 'Page.navigate', {}, failing ? 'error' : 'ok', failing ? 'net::ERR_NAME_NOT_RESOLVED' : undefined);
    if (failing) {
      t += 2_000_000;
      page++;
      continue;
    }
    url = `${SHOP}${path}`;
    const docBody = '<!doctype html><html><head><title>Shop</title>'.padEnd(14_000, ' <div class="product-card">Lamp</div>');
    request(t + 5_000, url, 'Document', 'text/html', 48_000, { status: 200 }, docBody);
    navSeq++;
    emit(t + 120_000, 'page_navigation', { url, frame_id: TAB, loader_id: `L-${navSeq}` });
    let s = t + 150_000;
    for (let i = 0; i < 30; i++) {
      const kind = i % 6;
      const target =
        kind === 0
          ? `${CDN}/js/chunk-${i}.${(page * 7 + i).toString(16)}.js`
          : kind === 1
            ? `${CDN}/css/app-${i}.css`
            : kind === 2
              ? `${FONTS}/inter-${i}.woff2`
              : `${CDN}/img/products/${1000 + i}.webp?w=640&h=480&fit=crop&auto=format`;
      const type = kind === 0 ? 'Script' : kind === 1 ? 'Stylesheet' : kind === 2 ? 'Font' : 'Image';
      request(
        s,
        target,
        type,
        kind === 0 ? 'application/javascript' : kind === 1 ? 'text/css' : kind === 2 ? 'font/woff2' : 'image/webp',
        12_000 + Math.floor(random() * 80_000),
      );
      s += 8_000;
    }
    // The tracker's beacon is blocked; its pixel 404s.
    request(s, `${TRACKER}/collect?v=2&tid=UA-1234&cid=${page}&t=pageview&dp=${encodeURIComponent(path)}`, 'Ping', 'text/plain', 0, {
      error: 'net::ERR_BLOCKED_BY_CLIENT',
    });
    request(s + 1_000, `${TRACKER}/pixel.gif?cid=${page}`, 'Image', 'text/html', 120, { status: 404 });
    emit(s + 40_000, 'page_dom_content_loaded', { cdp_timestamp: s / 1e6 });
    emit(s + 300_000, 'page_load', { cdp_timestamp: s / 1e6 });
    emit(s + 320_000, 'page_lcp', {
      source_frame_id: TAB,
      time: 812.4,
      lcp_details: { render_time: 812.4, load_time: 790.1, size: 184_320, element_id: 'hero', url: `${CDN}/img/hero.webp` },
    });
    for (let i = 0; i < 2; i++)
      emit(s + 330_000 + i, 'page_layout_shift', {
        source_frame_id: TAB,
        time: 900 + i * 40,
        duration: 0,
        layout_shift_details: { value: 0.012, had_recent_input: false },
      });
    for (let i = 0; i < 8; i++)
      emit(s + 350_000 + i * 1000, 'console_log', {
        level: 'log',
        text: `[analytics] event page_view ${path} ${i}`,
        args: [`[analytics] event page_view ${path} ${i}`, '{…}'],
      });
    if (page % 3 === 0) {
      emit(s + 400_000, 'console_error', {
        text: "Uncaught TypeError: Cannot read properties of undefined (reading 'price')",
        line: 1,
        column: 48_211,
        source_url: `${CDN}/js/chunk-0.${(page * 7).toString(16)}.js`,
        stack_trace: {
          callFrames: Array.from({ length: 12 }, (_, i) => ({
            functionName: `fn${i}`,
            scriptId: String(40 + i),
            url: `${CDN}/js/chunk-0.js`,
            lineNumber: 1,
            columnNumber: 48_211 - i,
          })),
        },
      });
    }
    if (page % 5 === 0)
      emit(s + 410_000, 'console_error', { level: 'error', text: `Failed to render recommendation widget for sku ${pick(errorIds) + page}`, args: [] });
    emit(s + 1_300_000, 'page_layout_settled', {});
    emit(s + 1_310_000, 'page_navigation_settled', {});
    emit(s + 1_320_000, 'network_idle', {});
    emit(s + 1_400_000, 'monitor_screenshot', { png: screenshot }, { kind: 'agent' });
    // The automation clicks and types.
    let a = s + 2_000_000;
    for (let i = 0; i < 4; i++) {
      window = action(a, 'Input.dispatchMouseEvent', { event_type: 'mousePressed', x: 200 + i * 10, y: 300, button: 'left', click_count: 1 });
      emit(a + 30_000, 'interaction_click', {
        x: 200 + i * 10,
        y: 300,
        selector: `main > section.products > article:nth-child(${i + 1}) > button.add-to-cart`,
        tag: 'BUTTON',
        text: 'Add to cart',
      });
      request(
        a + 40_000,
        `${API}/v2/cart/items`,
        'Fetch',
        'application/json',
        900,
        { status: 200 },
        '{"items":[{"sku":1842,"qty":1,"price":49.9}],"total":49.9,"currency":"EUR"}',
      );
      a += 1_500_000;
    }
    action(a, 'Input.insertText', { text_length: 9 });
    emit(a + 5_000, 'interaction_key', { key: 'Enter', selector: 'input#search', tag: 'INPUT' });
    emit(a + 800_000, 'interaction_scroll_settled', { from_x: 0, from_y: 0, to_x: 0, to_y: 1400, target_selector: 'html' });
    emit(a + 900_000, 'page_web_vitals', {
      reason: 'navigated',
      ttfb: 88.6,
      fcp: 640.2,
      lcp: { value: 812.4, element: { selector: 'img#hero', tag: 'IMG' } },
      cls: { value: 0.024 },
    });
    // Once in the hour: a crash and its recovery, hangs, a dialog, a download, a telemetry gap.
    if (page === 40) {
      emit(a + 950_000, 'page_crashed', { status: 'crashed', error_code: 11 });
      emit(a + 3_950_000, 'page_recovered', { down_ms: 3000 });
    }
    if (page === 70 || page === 130) {
      emit(a + 950_000, 'page_unresponsive', { threshold_ms: 5000 });
      emit(a + 7_950_000, 'page_responsive', { unresponsive_ms: 7400 });
      emit(a + 960_000, 'page_long_task', {
        source_frame_id: TAB,
        time: 5120.2,
        duration: 7400,
        attribution: [{ name: 'self' }],
        scripts: [
          {
            invoker_type: 'event-listener',
            invoker: 'BUTTON#checkout.onclick',
            source_url: `${CDN}/js/chunk-0.js`,
            source_function_name: 'computeTotals',
            source_char_position: 48211,
            duration: 7390,
          },
        ],
      });
    }
    if (page === 90) {
      emit(a + 950_000, 'page_dialog_opened', {
        dialog_type: 'confirm',
        message: 'Leave checkout? Your cart will be kept for 30 minutes.',
        dialog_frame_id: TAB,
        has_browser_handler: false,
      });
      emit(a + 2_950_000, 'page_dialog_closed', { dialog_type: 'confirm', accepted: true, open_ms: 2000, closed_by: 'cdp_client' });
    }
    if (page === 100) {
      emit(a + 950_000, 'network_download_started', {
        guid: 'dl-1',
        suggested_filename: 'invoice-2026-11.pdf',
        mime_type: 'application/pdf',
        url: `${SHOP}/account/invoice.pdf`,
      });
      emit(a + 1_950_000, 'network_download_finished', { guid: 'dl-1', state: 'completed', received_bytes: 88_213, total_bytes: 88_213 });
    }
    if (page === 150) {
      emit(a + 950_000, 'monitor_disconnected', { reason: 'unresponsive' }, { kind: 'agent' });
      emit(a + 3_950_000, 'monitor_reconnected', { reconnect_duration_ms: 3000 }, { kind: 'agent' });
    }
    // The cart poll every 2 s until the next page; the API is flaky (a 503 now and then).
    const pageEnd = t + 20_000_000;
    while (nextPoll < pageEnd) {
      if (nextPoll > a)
        request(
          nextPoll,
          `${API}/v2/cart?poll=1`,
          'XHR',
          'application/json',
          300,
          random() < 0.02 ? { status: 503 } : { status: 200 },
          '{"items":3,"total":149.7}',
        );
      nextPoll += 2_000_000;
    }
    // Images still loading when the next navigation begins are canceled.
    request(pageEnd - 50_000, `${CDN}/img/products/lazy-${page}.webp`, 'Image', 'image/webp', 0, { error: 'net::ERR_ABORTED', canceled: true });
    t = pageEnd;
    page++;
  }
  events.sort((x, y) => x.ts - y.ts);
  return events.filter((event) => event.ts < end);
}
