// The bench's local web server and its fixed page set. Nothing but the pages drives the browser:
// the tab sits on /idle, long-polling /control/next; a chain of pages is started by answering that
// poll, and each page of the chain reports its own measurement with navigator.sendBeacon and
// navigates to the next one (the last one back to /idle). The same small reporting script is in
// every page and every mode, so a run with no CDP client at all is measured exactly like the others.
//
// 127.0.0.1 and localhost are different sites: the typical page's two iframes are loaded from
// localhost, so Chromium puts them in an out-of-process iframe (a target of its own).
//
// Every response is `Cache-Control: no-store`: each load fetches all its subresources (memory-cache
// hits would produce no CDP events at all).

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync } from 'node:zlib';
import { monoMs } from './processes.ts';

export interface Beacon {
  chain: number;
  index: number;
  page: string;
  /** The page's measurement (ms since its time origin, or a count for workload pages). */
  metric: number;
  extra?: Record<string, number>;
  /** Monotonic ms when the server received it. */
  receivedAt: number;
}

/** Markers the workload pages log; consumers count and time the lines that carry them. */
export const FLOOD_MARKER = 'BTAF';
export const LATENCY_MARKER = 'BTAL';
export const FETCH_PATH = '/api/f?k=';

// ---- the pages' compositions -------------------------------------------------------------------
/** The typical page (80 subresources). */
const TYPICAL = { css: 8, jsSync: 12, jsDefer: 4, png: 32, svg: 8, fonts: 4, iframes: 2 } as const;
/** Per iframe: its document plus 1 css, 1 js, 3 png. */
const IFRAME_SUBRESOURCES = 5;
export const TYPICAL_SUBRESOURCES =
  TYPICAL.css + TYPICAL.jsSync + TYPICAL.jsDefer + TYPICAL.png + TYPICAL.svg + TYPICAL.fonts + TYPICAL.iframes * (1 + IFRAME_SUBRESOURCES);

/**
 * The mixed page (the shape of the independent page-load check): `js` scripts each log one console
 * line, `fetches` fetch() a small JSON document while the page loads.
 */
const MIXED = { css: 10, js: 10, fetches: 20, images: 20, iframes: 2 } as const;
export const MIXED_SUBRESOURCES = MIXED.css + MIXED.js + MIXED.fetches + MIXED.images + MIXED.iframes * (1 + IFRAME_SUBRESOURCES);

interface Asset {
  type: string;
  body: Buffer;
}

interface Chain {
  id: number;
  /** Path (with query) of page `index`, or undefined past the end. */
  pathAt(index: number): string | undefined;
  beacons: Beacon[];
  /** Called as each beacon arrives (before the chain resolves on the last one). */
  onBeacon: ((beacon: Beacon) => void) | undefined;
  lastIndex: number | undefined;
  resolve(beacons: Beacon[]): void;
  reject(err: Error): void;
}

export class PageServer {
  port = 0;
  private readonly server = http.createServer((req, res) => this.route(req, res));
  private readonly assets = buildAssets();
  private readonly chains = new Map<number, Chain>();
  private nextChainId = 1;
  /** A chain waiting for the idle page's next poll. */
  private queued: Chain | undefined;
  /** The idle page's held poll. */
  private heldPoll: http.ServerResponse | undefined;
  private idleWaiters: Array<() => void> = [];
  requests = 0;

  async start(): Promise<this> {
    // The idle page's poll is held open indefinitely.
    this.server.requestTimeout = 0;
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  get idleUrl(): string {
    return this.url('/idle');
  }

  /** True while the tab sits on /idle with its poll held (nothing in progress). */
  get isIdle(): boolean {
    return this.heldPoll !== undefined && this.queued === undefined;
  }

  /** Resolves once the tab is idle on /idle. */
  waitIdle(timeoutMs = 30_000): Promise<void> {
    if (this.isIdle) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the tab did not come back to /idle within ${timeoutMs} ms`)), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Run the pages `paths` in order; resolves with their beacons once the last one reported.
   * `onBeacon` sees each beacon as it arrives, when its page has just finished.
   */
  runChain(paths: readonly string[], timeoutMs: number, onBeacon?: (beacon: Beacon) => void): Promise<Beacon[]> {
    return this.startChain((i) => paths[i], timeoutMs, onBeacon);
  }

  /**
   * Pages `pathFor(0)`, `pathFor(1)`, ... as long as they start before the deadline (monotonic ms),
   * which is read before each page: a function may move it.
   */
  runUntil(pathFor: (index: number) => string, deadline: number | (() => number), timeoutMs: number): Promise<Beacon[]> {
    const until = typeof deadline === 'number' ? () => deadline : deadline;
    return this.startChain((i) => (i === 0 || monoMs() < until() ? pathFor(i) : undefined), timeoutMs);
  }

  async close(): Promise<void> {
    this.heldPoll?.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- conductor -----------------------------------------------------------------------------------

  private startChain(pathAt: (index: number) => string | undefined, timeoutMs: number, onBeacon?: (beacon: Beacon) => void): Promise<Beacon[]> {
    if (this.queued) return Promise.reject(new Error('a chain is already waiting to start'));
    const id = this.nextChainId++;
    return new Promise<Beacon[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.chains.delete(id);
        if (this.queued?.id === id) this.queued = undefined;
        reject(new Error(`chain ${id} did not finish within ${timeoutMs} ms (${chain.beacons.length} pages reported)`));
      }, timeoutMs);
      const chain: Chain = {
        id,
        pathAt,
        beacons: [],
        onBeacon,
        lastIndex: undefined,
        resolve: (b) => {
          clearTimeout(timer);
          this.chains.delete(id);
          resolve(b);
        },
        reject: (e) => {
          clearTimeout(timer);
          this.chains.delete(id);
          reject(e);
        },
      };
      this.chains.set(id, chain);
      this.queued = chain;
      this.releasePoll();
    });
  }

  private releasePoll(): void {
    const chain = this.queued;
    const poll = this.heldPoll;
    if (!chain || !poll) return;
    this.queued = undefined;
    this.heldPoll = undefined;
    const first = chain.pathAt(0);
    sendJson(poll, { url: first === undefined ? null : chainUrl(first, chain.id, 0) });
  }

  /** The path the page `index` of `chain` goes to when done. */
  private nextOf(chain: Chain | undefined, index: number): string {
    if (!chain) return '/idle';
    const path = chain.pathAt(index + 1);
    if (path === undefined) {
      chain.lastIndex = index;
      return '/idle';
    }
    return chainUrl(path, chain.id, index + 1);
  }

  private onBeacon(body: string): void {
    let beacon: Beacon;
    try {
      const raw = JSON.parse(body) as Omit<Beacon, 'receivedAt'>;
      beacon = { ...raw, receivedAt: monoMs() };
    } catch {
      return;
    }
    const chain = this.chains.get(beacon.chain);
    if (!chain) return;
    chain.beacons.push(beacon);
    chain.onBeacon?.(beacon);
    if (chain.lastIndex !== undefined && beacon.index === chain.lastIndex) chain.resolve(chain.beacons);
  }

  // ---- routing -------------------------------------------------------------------------------------

  private route(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.requests++;
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    if (path === '/beacon' && req.method === 'POST') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        this.onBeacon(body);
        res.writeHead(204, NO_STORE).end();
      });
      return;
    }
    if (path === '/control/next') {
      this.heldPoll?.destroy();
      this.heldPoll = res;
      res.on('close', () => {
        if (this.heldPoll === res) this.heldPoll = undefined;
      });
      if (this.queued) this.releasePoll();
      else for (const waiter of this.idleWaiters.splice(0)) waiter();
      return;
    }
    if (path === '/idle') {
      sendHtml(res, IDLE_PAGE);
      return;
    }
    if (path === '/still') {
      sendHtml(res, stillPage(Number(url.searchParams.get('n')), this.port));
      return;
    }
    if (path === '/animated') {
      sendHtml(res, ANIMATED_PAGE);
      return;
    }
    if (path.startsWith('/a/')) {
      const asset = this.assets.get(path.slice(3));
      if (!asset) {
        notFound(res);
        return;
      }
      res.writeHead(200, { 'content-type': asset.type, ...NO_STORE }).end(asset.body);
      return;
    }
    if (path === '/api/item') {
      sendJson(res, apiItem(Number(url.searchParams.get('b')), Number(url.searchParams.get('k'))));
      return;
    }
    if (path === '/api/f') {
      sendJson(res, { k: Number(url.searchParams.get('k')), ok: true });
      return;
    }
    if (path === '/f/frame') {
      sendHtml(res, iframePage(Number(url.searchParams.get('n'))));
      return;
    }
    if (path.startsWith('/p/')) {
      const chainId = Number(url.searchParams.get('c'));
      const index = Number(url.searchParams.get('i'));
      const chain = this.chains.get(chainId);
      const ctx: PageContext = { chain: chainId, index, next: this.nextOf(chain, index), query: url.searchParams, port: this.port };
      const render = PAGES[path.slice(3)];
      if (!render) {
        notFound(res);
        return;
      }
      sendHtml(res, render(ctx));
      return;
    }
    notFound(res);
  }
}

const NO_STORE = { 'cache-control': 'no-store' };

function sendHtml(res: http.ServerResponse, html: string): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...NO_STORE }).end(html);
}

function sendJson(res: http.ServerResponse, value: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json', ...NO_STORE }).end(JSON.stringify(value));
}

function notFound(res: http.ServerResponse): void {
  res.writeHead(404, { 'content-type': 'text/plain', ...NO_STORE }).end('not found');
}

function chainUrl(path: string, chain: number, index: number): string {
  return `${path}${path.includes('?') ? '&' : '?'}c=${chain}&i=${index}`;
}

// ---- pages ---------------------------------------------------------------------------------------

interface PageContext {
  chain: number;
  index: number;
  next: string;
  query: URLSearchParams;
  port: number;
}

/** The reporting script, identical in every page: one beacon, then on to the next page. */
function reporter(ctx: PageContext, page: string): string {
  return `<script>
window.__bench = {
  done: function (metric, extra) {
    navigator.sendBeacon('/beacon', JSON.stringify({ chain: ${ctx.chain}, index: ${ctx.index}, page: ${JSON.stringify(page)}, metric: metric, extra: extra }));
    setTimeout(function () { location.replace(${JSON.stringify(ctx.next)}); }, 0);
  }
};
</script>`;
}

/** Reports loadEventEnd (ms since navigation start) once the load event has finished. */
const REPORT_LOAD = `<script>
addEventListener('load', function () {
  setTimeout(function () {
    var nav = performance.getEntriesByType('navigation')[0];
    __bench.done(nav.loadEventEnd, { dcl: nav.domContentLoadedEventEnd, resources: performance.getEntriesByType('resource').length });
  }, 0);
});
</script>`;

function head(ctx: PageContext, page: string, extra = ''): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${page}</title>${reporter(ctx, page)}${extra}</head>`;
}

const IDLE_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>idle</title></head><body>idle<script>
(function poll() {
  fetch('/control/next', { cache: 'no-store' }).then(function (r) { return r.json(); }).then(function (j) {
    if (j.url) location.replace(j.url); else poll();
  }, function () { setTimeout(poll, 200); });
})();
</script></body></html>`;

function typicalPage(ctx: PageContext): string {
  const parts: string[] = [];
  for (let k = 0; k < TYPICAL.css; k++) parts.push(`<link rel="stylesheet" href="/a/s${k}.css">`);
  for (let k = 0; k < TYPICAL.jsDefer; k++) parts.push(`<script defer src="/a/d${k}.js"></script>`);
  let body = '<header><h1 class="f0">A typical page</h1><nav>';
  for (let k = 0; k < 12; k++) body += `<a class="c${k % TYPICAL.css}-${k}" href="#s${k}">Section ${k}</a> `;
  body += '</nav></header><main>';
  for (let k = 0; k < TYPICAL.png; k++) {
    body += `<article class="card c${k % TYPICAL.css}-${k % 40}"><img src="/a/i${k}.png" width="32" height="32" alt="">`;
    body += `<h2 class="f${k % TYPICAL.fonts}">Item ${k}</h2><p>${LOREM}</p>`;
    if (k < TYPICAL.svg) body += `<img src="/a/v${k}.svg" width="24" height="24" alt="">`;
    body += '</article>';
  }
  for (let n = 0; n < TYPICAL.iframes; n++) body += `<iframe src="http://localhost:${ctx.port}/f/frame?n=${n}" width="300" height="150"></iframe>`;
  body += '</main>';
  for (let k = 0; k < TYPICAL.jsSync; k++) body += `<script src="/a/j${k}.js"></script>`;
  return `${head(ctx, 'typical', parts.join('') + REPORT_LOAD)}<body>${body}</body></html>`;
}

/**
 * The independent check's page: 10 stylesheets, 10 scripts that each log one console line, 20
 * fetch() calls of JSON made while the page loads (they do not hold its load event), 20 small
 * images and 2 cross-site iframes; `loadEventEnd`. Its text bodies are the documents, the 20 JSON
 * answers, and the 20 stylesheets and scripts that the default body policy leaves out.
 */
function mixedPage(ctx: PageContext): string {
  const parts: string[] = [];
  for (let k = 0; k < MIXED.css; k++) parts.push(`<link rel="stylesheet" href="/a/m${k}.css">`);
  let body = `<script>for (var k = 0; k < ${MIXED.fetches}; k++) fetch('/api/item?b=${ctx.index}&k=' + k).then(function (r) { return r.json(); });</script>`;
  body += '<header><h1>A mixed page</h1></header><main>';
  for (let k = 0; k < MIXED.images; k++)
    body += `<article class="card m${k % MIXED.css}-${k}"><img src="/a/i${k}.png" width="32" height="32" alt=""><p>${LOREM}</p></article>`;
  for (let n = 0; n < MIXED.iframes; n++) body += `<iframe src="http://localhost:${ctx.port}/f/frame?n=${n}" width="300" height="150"></iframe>`;
  body += '</main>';
  for (let k = 0; k < MIXED.js; k++) body += `<script src="/a/mj${k}.js"></script>`;
  return `${head(ctx, 'mixed', parts.join('') + REPORT_LOAD)}<body>${body}</body></html>`;
}

/** An idle tab's page (section 6): content, images and a cross-site iframe, and nothing after its load. */
/**
 * A page that animates continuously (the replay section, bench/sections/replay.ts): text, a
 * gradient box crossing the page and a running clock, repainted every animation frame.
 */
const ANIMATED_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>animated</title><style>
body{margin:0;font:18px sans-serif;background:#fafafa}#box{position:absolute;width:240px;height:240px;border-radius:24px;background:linear-gradient(135deg,#e33,#33e)}
#clock{position:fixed;right:12px;top:8px;font:28px monospace}p{max-width:900px;margin:24px}</style></head><body>
<div id="box"></div><div id="clock"></div><p>${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(30)}</p>
<script>function frame(t){var b=document.getElementById('box');b.style.left=((t/4)%1100)+'px';b.style.top=(240+Math.sin(t/400)*180)+'px';
document.getElementById('clock').textContent=(t/1000).toFixed(3);requestAnimationFrame(frame)}requestAnimationFrame(frame)</script></body></html>`;

function stillPage(n: number, port: number): string {
  let body = `<h1>Still page ${n}</h1>`;
  for (let k = 0; k < 6; k++) body += `<article class="card"><img src="/a/i${k}.png" width="32" height="32" alt=""><p>${LOREM}</p></article>`;
  body += `<iframe src="http://localhost:${port}/f/frame?n=${n}" width="300" height="150"></iframe>`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>still ${n}</title><link rel="stylesheet" href="/a/s0.css"></head><body>${body}<script src="/a/j0.js"></script></body></html>`;
}

function iframePage(n: number): string {
  let body = `<link rel="stylesheet" href="/a/fs.css"><p>Embedded widget ${n}</p>`;
  for (let k = 0; k < 3; k++) body += `<img src="/a/fi${k}.png" width="32" height="32" alt="">`;
  body += '<script src="/a/fj.js"></script>';
  return `<!doctype html><html><head><meta charset="utf-8"></head><body>${body}</body></html>`;
}

/** 1,500 console calls of every common shape while the page loads. */
function consolePage(ctx: PageContext): string {
  const script = `<script>
for (var k = 0; k < 1500; k++) {
  switch (k % 10) {
    case 0: console.log('item', k, { id: k, name: 'n' + k, tags: ['a', 'b'] }); break;
    case 1: console.info('info line ' + k); break;
    case 2: console.warn('warn', k, [1, 2, 3]); break;
    case 3: console.debug('debug', k, true); break;
    case 4: console.error('error line ' + k); break;
    default: console.log('log line ' + k + ' ' + 'lorem ipsum dolor sit amet');
  }
}
</script>`;
  return `${head(ctx, 'console', REPORT_LOAD)}<body><p>console-heavy page</p>${script}</body></html>`;
}

/** An SPA shell: after load, 4 bursts of 20 XHR/fetch calls, each rendered and pushState'd. */
function spaPage(ctx: PageContext): string {
  return `${head(ctx, 'spa', '<link rel="stylesheet" href="/a/app.css">')}<body><div id="app"><h1>SPA</h1><ul id="list"></ul></div><script src="/a/app.js"></script></body></html>`;
}

const SPA_APP = `(function () {
  var bursts = 4, per = 20, b = 0;
  var list = document.getElementById('list');
  function get(url, useXhr) {
    if (!useXhr) return fetch(url).then(function (r) { return r.json(); });
    return new Promise(function (resolve, reject) {
      var x = new XMLHttpRequest();
      x.open('GET', url);
      x.onload = function () { resolve(JSON.parse(x.responseText)); };
      x.onerror = reject;
      x.send();
    });
  }
  function burst() {
    var calls = [];
    for (var k = 0; k < per; k++) calls.push(get('/api/item?b=' + b + '&k=' + k, k % 2 === 0));
    return Promise.all(calls).then(function (items) {
      var frag = document.createDocumentFragment();
      items.forEach(function (it) { var li = document.createElement('li'); li.textContent = it.name + ' ' + it.price; frag.appendChild(li); });
      list.appendChild(frag);
      history.pushState({ b: b }, '', location.pathname + location.search + '#view' + b);
      console.log('view', b, items.length);
      b++;
      if (b < bursts) return burst();
    });
  }
  addEventListener('load', function () { burst().then(function () { __bench.done(performance.now()); }); });
})();`;

/** A page named `name` (its body says so) that runs `onLoad`, JavaScript statements, once it has loaded. */
function onLoadPage(ctx: PageContext, name: string, onLoad: string): string {
  return `${head(ctx, name)}<body>${name}<script>
addEventListener('load', function () {
${onLoad}
});
</script></body></html>`;
}

/** Throughput: `n` console.log lines as fast as the page can make them (yielding every 500). */
function floodPage(ctx: PageContext): string {
  const n = Number(ctx.query.get('n') ?? 20000);
  const onLoad = `  var N = ${n}, i = 0, start = performance.now();
  function chunk() {
    var end = Math.min(N, i + 500);
    for (; i < end; i++) console.log('${FLOOD_MARKER}' + i);
    if (i < N) setTimeout(chunk, 0); else __bench.done(performance.now() - start);
  }
  setTimeout(chunk, 0);`;
  return onLoadPage(ctx, 'flood', onLoad);
}

/** Throughput: `n` fetches of a small JSON document, 32 at a time. */
function fetchesPage(ctx: PageContext): string {
  const n = Number(ctx.query.get('n') ?? 2000);
  const onLoad = `  var N = ${n}, next = 0, start = performance.now();
  function one() {
    if (next >= N) return;
    var k = next++;
    return fetch('${FETCH_PATH}' + k).then(function (r) { return r.text(); }).then(one);
  }
  var workers = [];
  for (var w = 0; w < 32; w++) workers.push(one());
  Promise.all(workers).then(function () { __bench.done(performance.now() - start); });`;
  return onLoadPage(ctx, 'fetches', onLoad);
}

/** Latency: 10 numbered lines every 10 ms (1,000 events/s) for `ms` milliseconds. */
function steadyPage(ctx: PageContext): string {
  const base = Number(ctx.query.get('base') ?? 0);
  const ms = Number(ctx.query.get('ms') ?? 5000);
  const onLoad = `  var n = ${base}, end = performance.now() + ${ms};
  var timer = setInterval(function () {
    for (var k = 0; k < 10; k++) console.log('${LATENCY_MARKER}' + (n++) + '.');
    if (performance.now() >= end) { clearInterval(timer); __bench.done(n - ${base}); }
  }, 10);`;
  return onLoadPage(ctx, 'steady', onLoad);
}

/**
 * Soak: an SPA-like page with 10 subresources that, for ~3 s, fetches a burst of 5 JSON documents
 * every 300 ms, pushState's and logs; then the next soak page is loaded.
 */
function soakPage(ctx: PageContext): string {
  const links = '<link rel="stylesheet" href="/a/s0.css"><link rel="stylesheet" href="/a/app.css">';
  let body = '<div id="app"><ul id="list"></ul>';
  for (let k = 0; k < 5; k++) body += `<img src="/a/i${k}.png" width="32" height="32" alt="">`;
  body += '</div><script src="/a/j0.js"></script><script src="/a/j1.js"></script><script src="/a/d0.js"></script>';
  const script = `<script>
addEventListener('load', function () {
  var round = 0, list = document.getElementById('list');
  var timer = setInterval(function () {
    var calls = [];
    for (var k = 0; k < 5; k++) calls.push(fetch('/api/item?b=' + round + '&k=' + k).then(function (r) { return r.json(); }));
    Promise.all(calls).then(function (items) {
      items.forEach(function (it) { var li = document.createElement('li'); li.textContent = it.name; list.appendChild(li); });
      history.pushState({}, '', location.pathname + location.search + '#r' + round);
      console.log('soak round', round, { items: items.length });
    });
    if (++round === 10) { clearInterval(timer); setTimeout(function () { __bench.done(performance.now()); }, 300); }
  }, 300);
});
</script>`;
  return `${head(ctx, 'soak', links)}<body>${body}${script}</body></html>`;
}

const PAGES: Record<string, (ctx: PageContext) => string> = {
  typical: typicalPage,
  mixed: mixedPage,
  console: consolePage,
  spa: spaPage,
  flood: floodPage,
  fetches: fetchesPage,
  steady: steadyPage,
  soak: soakPage,
};

// ---- assets ----------------------------------------------------------------------------------------

const LOREM =
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris.';

function apiItem(b: number, k: number): unknown {
  return { id: b * 100 + k, name: `item ${b}-${k}`, price: ((b * 31 + k * 17) % 1000) / 10, description: LOREM, tags: ['new', 'sale', `t${k % 7}`] };
}

function buildAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const text = (name: string, type: string, body: string) => assets.set(name, { type, body: Buffer.from(body) });
  for (let k = 0; k < TYPICAL.css; k++) {
    let css = k === 0 ? fontFaces() : '';
    for (let j = 0; j < 40; j++) css += `.c${k}-${j}{margin:${j % 9}px ${j % 5}px;padding:${j % 7}px;color:#${hex6(k * 40 + j)};border-radius:${j % 4}px}\n`;
    css += `.card{display:inline-block;width:220px;vertical-align:top;margin:4px}\n`;
    text(`s${k}.css`, 'text/css', css);
  }
  for (let k = 0; k < TYPICAL.jsSync; k++) text(`j${k}.js`, 'application/javascript', scriptBody(`j${k}`));
  for (let k = 0; k < TYPICAL.jsDefer; k++) text(`d${k}.js`, 'application/javascript', scriptBody(`d${k}`));
  for (let k = 0; k < TYPICAL.png; k++) assets.set(`i${k}.png`, { type: 'image/png', body: png(32, 32, k) });
  for (let k = 0; k < TYPICAL.svg; k++) {
    text(
      `v${k}.svg`,
      'image/svg+xml',
      `<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24"><circle cx="12" cy="12" r="${4 + k}" fill="#${hex6(k * 997)}"/></svg>`,
    );
  }
  // Font files are not valid fonts (the face falls back), but they are requested and transferred
  // like real ones, which is what matters to the browser's and the agent's network work.
  for (let k = 0; k < TYPICAL.fonts; k++) assets.set(`f${k}.woff2`, { type: 'font/woff2', body: pseudoRandomBytes(6 * 1024, k + 1) });
  for (let k = 0; k < MIXED.css; k++) {
    let css = '';
    for (let j = 0; j < 20; j++) css += `.m${k}-${j}{margin:${j % 9}px;padding:${j % 7}px;color:#${hex6(k * 20 + j)}}\n`;
    text(`m${k}.css`, 'text/css', `${css}.card{display:inline-block;width:220px;vertical-align:top;margin:4px}\n`);
  }
  for (let k = 0; k < MIXED.js; k++)
    text(`mj${k}.js`, 'application/javascript', `${scriptBody(`mj${k}`)}console.log('mixed script ${k}', window.mj${k}.sum);\n`);
  text('fs.css', 'text/css', 'body{font:14px sans-serif;margin:0;padding:4px;background:#f4f4f4}\n');
  text('fj.js', 'application/javascript', scriptBody('frame'));
  for (let k = 0; k < 3; k++) assets.set(`fi${k}.png`, { type: 'image/png', body: png(32, 32, 100 + k) });
  text('app.css', 'text/css', '#app{font:14px sans-serif}#list li{padding:2px}\n');
  text('app.js', 'application/javascript', SPA_APP);
  return assets;
}

function fontFaces(): string {
  let css = '';
  for (let k = 0; k < TYPICAL.fonts; k++)
    css += `@font-face{font-family:"BenchFont${k}";src:url(/a/f${k}.woff2) format("woff2")}.f${k}{font-family:"BenchFont${k}",sans-serif}\n`;
  return css;
}

function scriptBody(name: string): string {
  let js = `(function () {\n  var data = [`;
  for (let j = 0; j < 120; j++) js += `${(j * 7919) % 1000},`;
  js += `];\n  var sum = 0;\n  for (var i = 0; i < data.length; i++) sum += data[i] * (i % 3);\n`;
  js += `  window.__benchScripts = (window.__benchScripts || 0) + 1;\n  window['${name}'] = { sum: sum, at: performance.now() };\n})();\n`;
  return js;
}

function hex6(n: number): string {
  return (((n * 2654435761) >>> 8) & 0xffffff).toString(16).padStart(6, '0');
}

function pseudoRandomBytes(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed * 2654435761;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

// A minimal PNG encoder (RGBA, no filter): enough for small, valid, distinct images.
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

function png(width: number, height: number, seed: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const noise = pseudoRandomBytes(width * height, seed + 7);
  const raw = Buffer.alloc((width * 4 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 4 + 1);
    raw[row] = 0;
    for (let x = 0; x < width; x++) {
      const p = row + 1 + x * 4;
      raw[p] = (x * 8 + seed * 13) & 0xff;
      raw[p + 1] = (y * 8 + seed * 29) & 0xff;
      raw[p + 2] = noise[y * width + x]!;
      raw[p + 3] = 255;
    }
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, pngChunk('IHDR', ihdr), pngChunk('IDAT', deflateSync(raw)), pngChunk('IEND', Buffer.alloc(0))]);
}
