// Runs injected/ code in a real Chromium page for unit tests of DOM logic (there is no DOM in
// Node): bundles one injected module with esbuild as a global, loads it into a blank page, and
// evaluates expressions there.

import CDP from 'chrome-remote-interface';
import { build } from 'esbuild';
import { ChromiumProcess } from '../../../src/browser/chromium-launcher.ts';

export class BrowserPage {
  private constructor(
    private readonly chromium: ChromiumProcess,
    private readonly client: CDP.Client,
    private readonly sessionId: string,
    private readonly bundle: string,
  ) {}

  /** A blank page with `entry` (a path under injected/) available as `globalThis[globalName]`. */
  static async open(entry: string, globalName: string): Promise<BrowserPage> {
    const built = await build({ entryPoints: [entry], bundle: true, format: 'iife', globalName, write: false, target: 'chrome110', logLevel: 'warning' });
    const chromium = await ChromiumProcess.launch();
    const client = await CDP({ target: chromium.browserWsUrl, local: true });
    const send = (client.send as (m: string, p?: object, s?: string) => Promise<any>).bind(client);
    const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
    return new BrowserPage(chromium, client, sessionId, `${built.outputFiles[0]!.text}\nglobalThis.${globalName} = ${globalName};`);
  }

  /** Replaces the document with `html` (declarative shadow roots included) and loads the bundle. */
  async setContent(html: string): Promise<void> {
    await this.evaluate(`document.documentElement.setHTMLUnsafe(${JSON.stringify(html)})`);
    await this.evaluate(this.bundle);
  }

  async evaluate<T = unknown>(expression: string): Promise<T> {
    const send = (this.client.send as (m: string, p?: object, s?: string) => Promise<any>).bind(this.client);
    const { result, exceptionDetails } = await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, this.sessionId);
    if (exceptionDetails) throw new Error(exceptionDetails.exception?.description ?? exceptionDetails.text);
    return result.value as T;
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => undefined);
    await this.chromium.close();
  }
}
