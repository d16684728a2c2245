import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPage } from './support/browser-page.ts';

describe('visible text of a clicked element', () => {
  let page: BrowserPage;

  beforeAll(async () => {
    page = await BrowserPage.open('injected/visible-text.ts', 'Text');
  });
  afterAll(() => page?.close());

  async function textOf(html: string, selector = '#t'): Promise<string> {
    await page.setContent(html);
    return page.evaluate<string>(`Text.visibleText(document.querySelector(${JSON.stringify(selector)}))`);
  }

  it('collapses white space and trims', async () => {
    expect(await textOf('<body><a id="t" href="#">\n   Read\n\t  more  </a></body>')).toBe('Read more');
  });

  it('separates block-level children with a space', async () => {
    expect(await textOf('<body><div id="t"><div>Title</div><p>Body</p><ul><li>one</li><li>two</li></ul></div></body>')).toBe('Title Body one two');
  });

  it('leaves out hidden elements, scripts and styles', async () => {
    expect(
      await textOf(
        '<body><div id="t">shown<span style="display:none">gone</span><span hidden>gone</span><span style="visibility:hidden">gone</span><script>var gone</script><style>.gone{}</style></div></body>',
      ),
    ).toBe('shown');
  });

  it('cuts at 200 characters without splitting a surrogate pair', async () => {
    const text = await textOf(`<body><p id="t">${'a'.repeat(199)}😀tail</p></body>`);
    expect(text).toBe('a'.repeat(199));
  });

  it('gives the label of a button-like input', async () => {
    expect(await textOf('<body><input id="t" type="submit" value="  Send   it "></body>')).toBe('Send it');
  });

  it('gives nothing for a text field, even with a value', async () => {
    expect(await textOf('<body><input id="t" value="typed by the user"></body>')).toBe('');
  });

  it('leaves out the content of form fields inside the clicked element', async () => {
    expect(await textOf('<body><label id="t">Notes <textarea>private notes</textarea><select><option>secret choice</option></select></label></body>')).toBe(
      'Notes',
    );
  });

  it('gives nothing for a password field', async () => {
    expect(await textOf('<body><input id="t" type="password" value="hunter2"></body>')).toBe('');
  });
});
