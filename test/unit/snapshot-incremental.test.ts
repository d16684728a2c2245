// Incremental snapshots (docs/page-script.md "Snapshots"): a snapshot refers to the subtrees no
// mutation touched since the previous one without walking them, and re-checks what no
// MutationObserver reports. After each kind of change, on real Chromium, the incremental
// snapshot, rebuilt from its references, equals a full snapshot of the same page taken then.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPage } from './support/browser-page.ts';

const PAGE = `<head><title>t</title><style>.a { color: red }</style></head><body>
<div id="a" class="x">attr</div>
<p id="p">old text</p>
<ul id="list"><li>one</li><li>two</li><li>three</li><li>four</li></ul>
<div id="host"><template shadowrootmode="open"><style>b { color: green }</style><span id="in">shadow old</span><div id="inner-scroll" style="height: 40px; overflow: auto"><div style="height: 400px">tall</div></div></template></div>
<form><input id="text" value="initial"><input id="check" type="checkbox"><input id="pw" type="password">
<select id="select"><option value="a">A</option><option value="b">B</option></select><textarea id="area">default</textarea></form>
<div id="scroller" style="height: 50px; overflow: auto"><div style="height: 500px">tall</div></div>
<x-late id="late"></x-late>
<div id="pop" popover>popover</div>
<dialog id="dialog">dialog</dialog>
<iframe id="frame"></iframe>
<section id="far"><div><div><span>deep, never touched</span></div></div></section>
</body>`;

/**
 * Takes an incremental snapshot and a full one, both rebuilt; `referred` says the incremental one
 * referred to its base. The full ones come from a second snapshotter of the page that is never
 * given a base (it walks everything every time), created with the first: a <style> changed through
 * the CSSOM is told from its content by what the snapshotter saw before.
 */
const COMPARE = `(() => {
  const mask = S.SNAPSHOT_MASKED_FIELDS.join(', ');
  const plain = (e) => typeof e.node === 'string' ? e.node : [e.node.name, e.node.attrs, ...e.node.children.map(plain)];
  const report = JSON.parse(window.inc.snapshot({ base: window.lastNumber, mask }));
  window.lastNumber = report.number;
  const incremental = window.incTrees.add({ ...report, frame_id: 'f' });
  if (window.framed) window.ref.markFrame(document.getElementById('frame'), 'FRAME-1');
  const fullReport = JSON.parse(window.ref.snapshot({ mask }));
  const fresh = new S.SnapshotTrees().add({ ...fullReport, frame_id: 'f' });
  // A first snapshot reads every element's scroll position; the others trust the scroll listener.
  const first = JSON.parse(S.createSnapshotter(window).snapshot({ mask })).html;
  const scrolls = (text) => (text.match(/"__playwright_scroll_(?:top|left)_":"\\d+"/g) ?? []).join();
  return {
    incremental: JSON.stringify(plain(incremental)),
    full: JSON.stringify(plain(fresh)),
    referred: report.base !== undefined,
    nodes: [report.nodes, fullReport.nodes],
    scrolls: [scrolls(JSON.stringify(plain(incremental))), scrolls(JSON.stringify(first))],
    html: JSON.stringify(report.html),
  };
})()`;

interface Compared {
  incremental: string;
  full: string;
  referred: boolean;
  nodes: [number, number];
  /** The scroll positions in the incremental snapshot and in a new snapshotter's first one. */
  scrolls: [string, string];
  html: string;
}

/** Waits for `el`'s next scroll event after running `set` (the listener sees it then). */
const scrolled = (el: string, set: string) => `new Promise((resolve) => { const el = ${el}; el.addEventListener('scroll', resolve, { once: true }); ${set}; })`;
const nextTask = 'new Promise((resolve) => setTimeout(resolve, 0))';

const CHANGES: Array<[string, string]> = [
  ['an attribute set', `document.getElementById('a').setAttribute('data-x', '1')`],
  ['an attribute removed', `document.getElementById('a').removeAttribute('class')`],
  ['a text node changed', `document.getElementById('p').firstChild.data = 'new text'`],
  ['a child inserted', `document.getElementById('list').append(Object.assign(document.createElement('li'), { textContent: 'five' }))`],
  ['a child removed', `document.getElementById('list').firstElementChild.remove()`],
  ['a node moved', `const l = document.getElementById('list'); l.prepend(l.lastElementChild)`],
  [
    'a node changed while detached and put back',
    `(async () => { const l = document.getElementById('list'); const n = l.children[1]; n.remove(); await ${nextTask}; n.textContent = 'changed while detached'; l.children[0].after(n); })()`,
  ],
  ['text in an open shadow root changed', `document.getElementById('host').shadowRoot.getElementById('in').textContent = 'shadow new'`],
  ['an attribute in a shadow root set', `document.getElementById('host').shadowRoot.getElementById('in').setAttribute('title', 't')`],
  ['an input value set by its property', `document.getElementById('text').value = 'set by script'`],
  ['a checkbox toggled by its property', `document.getElementById('check').checked = true`],
  ['a checkbox toggled by a click', `document.getElementById('check').click()`],
  ['a select changed', `document.getElementById('select').value = 'b'`],
  ['a textarea value set', `document.getElementById('area').value = 'typed'`],
  ['a password typed (masked)', `document.getElementById('pw').value = 'secret'`],
  ['an element scrolled', scrolled(`document.getElementById('scroller')`, 'el.scrollTop = 120')],
  ['an element in a shadow root scrolled', scrolled(`document.getElementById('host').shadowRoot.getElementById('inner-scroll')`, 'el.scrollTop = 30')],
  ['adoptedStyleSheets assigned', `const s = new CSSStyleSheet(); s.replaceSync('p { color: blue }'); document.adoptedStyleSheets = [s]; window.adopted = s`],
  ['an adopted sheet edited', `window.adopted.insertRule('ul { margin: 0 }')`],
  [
    'a shadow root adopting a sheet',
    `const s = new CSSStyleSheet(); s.replaceSync('span { color: teal }'); document.getElementById('host').shadowRoot.adoptedStyleSheets = [s]`,
  ],
  ['a rule inserted into a <style> (CSSOM)', `document.querySelector('style').sheet.insertRule('.b { color: blue }')`],
  [
    'a custom element defined later (upgraded, its shadow root attached)',
    `customElements.define('x-late', class extends HTMLElement { constructor() { super(); this.attachShadow({ mode: 'open' }).innerHTML = '<b>late</b>'; } })`,
  ],
  ['a popover shown', `document.getElementById('pop').showPopover()`],
  ['a modal dialog opened', `document.getElementById('dialog').showModal()`],
  ['the document URL changed (the <base> the snapshot adds)', `history.pushState(null, '', '#moved')`],
  ['an iframe named after its frame', `window.framed = true; window.inc.markFrame(document.getElementById('frame'), 'FRAME-1')`],
  ['a subtree replaced with innerHTML', `document.getElementById('list').innerHTML = '<li>new one</li><li>new two</li>'`],
];

describe('incremental snapshots', () => {
  let page: BrowserPage;

  beforeAll(async () => {
    page = await BrowserPage.open('test/unit/support/snapshot-entry.ts', 'S');
    await page.setContent(PAGE);
    await page.evaluate(
      `window.inc = S.createSnapshotter(window); window.ref = S.createSnapshotter(window); window.incTrees = new S.SnapshotTrees(); window.lastNumber = undefined`,
    );
    const first = await page.evaluate<Compared>(COMPARE);
    expect(first.incremental).toBe(first.full);
  }, 60_000);
  afterAll(() => page?.close());

  it('refers to the whole unchanged document with one reference', async () => {
    const compared = await page.evaluate<Compared>(COMPARE);
    expect(compared.html).toMatch(/^\[\[1,\d+\]\]$/);
    expect(compared.incremental).toBe(compared.full);
    expect(compared.nodes[0]).toBe(compared.nodes[1]);
  });

  for (const [change, script] of CHANGES) {
    it(`equals a full snapshot after ${change}`, async () => {
      await page.evaluate(`{ ${script} }`);
      const compared = await page.evaluate<Compared>(COMPARE);
      expect(compared.referred).toBe(true);
      expect(compared.incremental).toBe(compared.full);
      expect(compared.nodes[0]).toBe(compared.nodes[1]);
      expect(compared.scrolls[0]).toBe(compared.scrolls[1]);
    });
  }

  it('keeps the untouched subtree as a reference after a change elsewhere', async () => {
    await page.evaluate(`document.getElementById('p').firstChild.data = 'again'`);
    const compared = await page.evaluate<Compared>(COMPARE);
    expect(compared.incremental).toBe(compared.full);
    expect(compared.html).not.toContain('deep, never touched');
  });

  it('takes a full snapshot after more changes than it keeps track of', async () => {
    await page.evaluate(`{ const d = document.getElementById('a'); for (let i = 0; i < 50_001; i++) d.append('x'); }`);
    const compared = await page.evaluate<Compared>(COMPARE);
    expect(compared.referred).toBe(false);
    expect(compared.incremental).toBe(compared.full);
  });

  it('refers again after that full snapshot', async () => {
    await page.evaluate(`{ const d = document.getElementById('a'); d.replaceChildren('attr'); document.getElementById('p').firstChild.data = 'after' }`);
    const compared = await page.evaluate<Compared>(COMPARE);
    expect(compared.referred).toBe(true);
    expect(compared.incremental).toBe(compared.full);
    expect(compared.html).not.toContain('deep, never touched');
  });

  it('takes a full snapshot after it was paused (the category off), the changes meanwhile included', async () => {
    await page.evaluate(`window.inc.pause(); document.getElementById('p').firstChild.data = 'while paused'`);
    const compared = await page.evaluate<Compared>(COMPARE);
    expect(compared.referred).toBe(false);
    expect(compared.incremental).toBe(compared.full);
    expect(compared.html).toContain('while paused');
  });

  it('keeps the scroll positions a new snapshotter reads', async () => {
    const compared = await page.evaluate<Compared>(COMPARE);
    expect(compared.scrolls[0]).toBe('"__playwright_scroll_top_":"30","__playwright_scroll_top_":"120"');
    expect(compared.scrolls[1]).toBe(compared.scrolls[0]);
  });

  it('takes a full snapshot when more fields changed by property than it keeps track of', async () => {
    await page.evaluate(`{ const f = document.createElement('div'); f.id = 'many'; f.innerHTML = '<input>'.repeat(50_001); document.body.append(f); }`);
    await page.evaluate<Compared>(COMPARE);
    await page.evaluate(`{ for (const input of document.querySelectorAll('#many input')) input.value = 'v'; }`);
    const compared = await page.evaluate<Compared>(COMPARE);
    expect(compared.referred).toBe(false);
    expect(compared.incremental).toBe(compared.full);
  }, 60_000);
});
