// Switches of the cuts in what the agent asks of Chromium (docs/network.md "Renderer body buffers",
// docs/chromium.md "Domains by target type"). Each cut is on; its environment variable set to
// `off` turns it off, so that the bench can measure a cut against the agent without it in one
// interleaved run (docs/decisions.md "Diagnostic switches of the CDP cuts"). They are not
// settings: the telemetry is the same either way.

export interface CdpCuts {
  /**
   * `Network.enable` asks the renderer to keep no response bodies when the browser keeps durable
   * copies (the agent fetches bodies from those). `BTA_CUT_RENDERER_BUFFERS=off`: the renderer
   * keeps every body the agent may fetch, as without durable bodies.
   */
  rendererBodyBuffers: boolean;
  /**
   * Runtime is enabled on a worker (or any target other than a page or iframe) only when its
   * console is reported. `BTA_CUT_DOMAINS_BY_TYPE=off`: on every target whenever a category that
   * needs Runtime is on.
   */
  domainsByTargetType: boolean;
}

export const CUT_ENV = { rendererBodyBuffers: 'BTA_CUT_RENDERER_BUFFERS', domainsByTargetType: 'BTA_CUT_DOMAINS_BY_TYPE' } as const;

export function cdpCuts(env: Record<string, string | undefined> = process.env): CdpCuts {
  const on = (name: string) => env[name]?.trim().toLowerCase() !== 'off';
  return { rendererBodyBuffers: on(CUT_ENV.rendererBodyBuffers), domainsByTargetType: on(CUT_ENV.domainsByTargetType) };
}
