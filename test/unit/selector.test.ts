import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPage } from './support/browser-page.ts';

interface Described {
  /** Where the element is: `path` = an expression that finds it, for the report. */
  path: string;
  selector: string;
  /** How many elements the selector selects. */
  count: number;
  /** It selects exactly this element. */
  exact: boolean;
}

/**
 * Every element of the document and of its open shadow roots (recursively), each with its
 * selector and what that selector resolves to.
 */
const DESCRIBE_ALL = `(() => {
  const out = [];
  const visit = (root, where) => {
    for (const el of root.querySelectorAll('*')) {
      const selector = Sel.uniqueSelector(el);
      const found = Sel.resolveSelector(selector);
      out.push({ path: where + ' ' + el.localName + (el.id ? '#' + el.id : ''), selector, count: found.length, exact: found.length === 1 && found[0] === el });
      if (el.shadowRoot) visit(el.shadowRoot, where + ' ' + el.localName + ' >>>');
    }
  };
  visit(document, '');
  return out;
})()`;

const selectorOf = (expression: string) => `Sel.uniqueSelector(${expression})`;

describe('unique CSS selectors', () => {
  let page: BrowserPage;

  beforeAll(async () => {
    page = await BrowserPage.open('injected/selector.ts', 'Sel');
  });
  afterAll(() => page?.close());

  async function describeAll(html: string): Promise<Described[]> {
    await page.setContent(html);
    return page.evaluate<Described[]>(DESCRIBE_ALL);
  }

  const inexact = (all: Described[]) => all.filter((d) => !d.exact);

  it('uses #id alone for an element whose id is unique', async () => {
    await page.setContent('<body><div><p id="solo">x</p><p>y</p></div></body>');
    expect(await page.evaluate(selectorOf(`document.getElementById('solo')`))).toBe('#solo');
  });

  it('uses a lone tag when that tag is unique in the document (the shortest path)', async () => {
    await page.setContent('<body><div><div><table><tbody><tr><td>x</td></tr></tbody></table></div></div></body>');
    expect(await page.evaluate(selectorOf(`document.querySelector('table')`))).toBe('table');
  });

  it('stops at the nearest ancestor with a unique id, with :nth-of-type steps below it', async () => {
    await page.setContent(
      '<body><ul id="list"><li>a</li><li><span>b</span><span>c</span></li></ul><ol><li>a</li><li><span>b</span><span>c</span></li></ol></body>',
    );
    expect(await page.evaluate(selectorOf(`document.querySelectorAll('#list span')[1]`))).toBe('#list > li:nth-of-type(2) > span:nth-of-type(2)');
  });

  it('selects exactly each element sharing a duplicated id, without using that id', async () => {
    const all = await describeAll('<body><div id="dup"><b id="dup">1</b></div><section><i id="dup">2</i><i id="dup">3</i></section></body>');
    const duplicated = all.filter((d) => d.path.includes('#dup'));
    expect(duplicated).toHaveLength(4);
    expect(inexact(duplicated)).toEqual([]);
    expect(duplicated.filter((d) => d.selector.includes('#dup'))).toEqual([]);
  });

  it('selects exactly each element of a page without any id', async () => {
    const all = await describeAll(
      '<body><div><div><p>a</p><p>b<span>c</span><span>d</span></p></div><div><p>e</p></div></div><ul><li>1</li><li>2</li><li><ul><li>3</li></ul></li></ul></body>',
    );
    expect(all.length).toBeGreaterThan(15);
    expect(inexact(all)).toEqual([]);
  });

  it('anchors the path to :root when a look-alike chain exists deeper in the tree', async () => {
    // Both bodies are parsed away into one, so build the look-alike with the DOM.
    await page.setContent('<body><main>x</main></body>');
    await page.evaluate(
      `(() => { const fake = document.createElement('html'); fake.append(document.createElement('body')); fake.firstChild.append(document.createElement('main')); document.querySelector('main').append(fake); })()`,
    );
    expect(await page.evaluate(selectorOf(`document.querySelector('main')`))).toBe(':root > body > main');
    expect(inexact(await page.evaluate<Described[]>(DESCRIBE_ALL))).toEqual([]);
  });

  it('escapes ids that are not CSS identifiers', async () => {
    const all = await describeAll('<body><p id="1st">a</p><p id="a:b.c d">b</p><p id="#x[y]">c</p><p id="é-☃">d</p></body>');
    expect(inexact(all)).toEqual([]);
    expect(all.filter((d) => d.path.startsWith(' p')).every((d) => d.selector.startsWith('#'))).toBe(true);
  });

  it('selects exactly each SVG element, camelCase names included', async () => {
    const all = await describeAll(
      '<body><svg><defs><linearGradient id="g"><stop/><stop/></linearGradient></defs><g><circle/><circle/><rect/></g><g><circle/><foreignObject><div>html inside</div></foreignObject></g></svg><svg><circle/></svg></body>',
    );
    expect(all.filter((d) => d.path.includes('foreignObject'))).toHaveLength(1);
    expect(inexact(all)).toEqual([]);
  });

  it('reports SVG elements with their case-preserved tag in the selector', async () => {
    await page.setContent('<body><svg><foreignObject><div>x</div></foreignObject><foreignObject></foreignObject></svg></body>');
    expect(await page.evaluate(selectorOf(`document.getElementsByTagName('foreignObject')[1]`))).toBe('foreignObject:nth-of-type(2)');
  });

  it('pierces an open shadow root with " >>> "', async () => {
    await page.setContent('<body><div id="host"><template shadowrootmode="open"><p>in</p><button>go</button></template></div><button>outside</button></body>');
    expect(await page.evaluate(selectorOf(`document.getElementById('host').shadowRoot.querySelector('button')`))).toBe('#host >>> button');
  });

  it('selects exactly each element inside nested open shadow roots', async () => {
    const inner = '<template shadowrootmode="open"><span>deep</span><span id="x">deep2</span><div><span>deeper</span></div></template>';
    const all = await describeAll(
      `<body><my-card>${'<template shadowrootmode="open"><div><my-inner>' + inner + '</my-inner></div><my-inner>' + inner + '</my-inner><span id="x">same id as inside</span></template>'}</my-card><my-card></my-card></body>`,
    );
    expect(all.filter((d) => d.selector.split(' >>> ').length === 3).length).toBeGreaterThanOrEqual(8);
    expect(inexact(all)).toEqual([]);
  });

  it('anchors an ambiguous path at the top of a shadow root with :host', async () => {
    await page.setContent('<body><div id="h"><template shadowrootmode="open"><span>top</span><div><span>nested</span></div></template></div></body>');
    const selector = await page.evaluate<string>(selectorOf(`document.getElementById('h').shadowRoot.querySelector('span')`));
    expect(selector).toBe('#h >>> :host > span');
    expect(await page.evaluate(`Sel.resolveSelector(${JSON.stringify(selector)}).length`)).toBe(1);
  });
});
